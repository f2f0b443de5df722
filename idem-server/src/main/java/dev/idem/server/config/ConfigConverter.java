package dev.idem.server.config;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.DedupConfig;
import dev.idem.Expiry;
import dev.idem.IdemConfigException;
import dev.idem.key.KeyRule;
import dev.idem.server.auth.JwtSettings;
import dev.idem.server.config.IdemProperties.DedupProperties;
import dev.idem.server.config.IdemProperties.DeliverProperties;
import dev.idem.server.config.IdemProperties.JwtProperties;
import dev.idem.server.config.IdemProperties.OrderingProperties;
import dev.idem.server.config.IdemProperties.PipelineProperties;
import dev.idem.server.config.IdemProperties.ServerProperties;
import dev.idem.server.config.IdemProperties.SignatureProperties;
import dev.idem.server.config.IdemProperties.SourceProperties;
import dev.idem.server.config.IdemProperties.StoreProperties;
import dev.idem.server.config.IdemProperties.WebhookProperties;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.signature.SignatureScheme;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.transform.Transforms;
import dev.idem.store.jdbc.JdbcLayout;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Turns the bound {@link IdemProperties} into a validated {@link IdemConfig}: the one place where
 * defaults are applied, text is parsed (durations, sizes, enums) and rules between fields are
 * checked. Collects every problem it finds, each located in the file, before failing.
 *
 * <p>Rules between fields (each reported at the field that breaks it):
 *
 * <ul>
 *   <li>pipeline ids and webhook paths are unique;
 *   <li>{@code max_keys} is allowed only where the pipeline's store is {@code memory};
 *   <li>store fields must fit the store type ({@code path} for rocksdb, {@code url} for redis and
 *       jdbc, {@code prefix} for redis, {@code username}/{@code password} for jdbc);
 *   <li>{@code deliver.mode: async} needs a dedup step (the outbox entry is written with the key's
 *       commit) and a store with an outbox (rocksdb, memory or jdbc; not redis);
 *   <li>{@code dedup.mode: replay} needs {@code deliver.mode: sync} (the answer stored for
 *       duplicates is the downstream's response);
 *   <li>{@code deliver} names exactly one sink; {@code retries} is given at most once.
 * </ul>
 */
final class ConfigConverter {
  /** Sync delivery answers a waiting sender, so its retries are few and short by default. */
  static final RetryPolicy SYNC_DEFAULT_RETRY =
      new RetryPolicy(2, Duration.ofMillis(200), Duration.ofSeconds(2));

  private final YamlDocument doc;
  private final List<ConfigProblem> problems = new ArrayList<>();
  private final Set<String> reportedEarlier = new HashSet<>();
  private final int earlierCount;

  /**
   * A converter that reports its problems together with those found before binding.
   *
   * @param doc the document
   * @param earlier problems found while reading and binding; a field reported there (an unset
   *     variable, a value of the wrong type) is not reported again as missing
   */
  ConfigConverter(YamlDocument doc, List<ConfigProblem> earlier) {
    this.doc = doc;
    this.problems.addAll(earlier);
    this.earlierCount = earlier.size();
    earlier.forEach(p -> reportedEarlier.add(p.path()));
  }

  IdemConfig convert(IdemProperties p) {
    ServerSettings server =
        p.server == null ? ServerSettings.defaults() : orNull(() -> server(p.server), "server");
    StoreSettings store = p.store == null ? StoreSettings.defaults() : store(p.store, "store");
    List<PipelineSettings> pipelines = new ArrayList<>();
    if (p.pipelines == null || p.pipelines.isEmpty()) {
      problem("pipelines", "give at least one pipeline (see examples/quickstart.yaml)");
    } else {
      Map<String, String> ids = new HashMap<>();
      Map<String, String> paths = new HashMap<>();
      for (int i = 0; i < p.pipelines.size(); i++) {
        String at = "pipelines[" + i + "]";
        PipelineProperties pp = p.pipelines.get(i);
        if (pp == null) {
          problem(at, "is empty; a pipeline needs id, source.webhook and deliver");
          continue;
        }
        PipelineSettings ps = pipeline(pp, at, store);
        if (ps == null) {
          continue;
        }
        String otherId = ids.putIfAbsent(ps.id(), at);
        if (otherId != null) {
          problem(
              at + ".id", "'" + ps.id() + "' is already the id of " + otherId + "; ids are unique");
        }
        WebhookSettings hook = ps.webhook();
        String otherPath = hook == null ? null : paths.putIfAbsent(hook.path(), at);
        if (hook != null && otherPath != null) {
          problem(
              at + ".source.webhook.path",
              "'" + hook.path() + "' is already the path of " + otherPath + "; paths are unique");
        }
        pipelines.add(ps);
      }
    }
    if (!problems.isEmpty() || server == null || store == null) {
      throw new ConfigException(sorted());
    }
    try {
      return new IdemConfig(server, store, pipelines);
    } catch (IdemConfigException e) {
      problem("pipelines", e.getMessage());
      throw new ConfigException(sorted());
    }
  }

  /** The problems in file order, without a second report of a field reported before binding. */
  private List<ConfigProblem> sorted() {
    List<ConfigProblem> out = new ArrayList<>(problems.subList(0, earlierCount));
    for (ConfigProblem p : problems.subList(earlierCount, problems.size())) {
      if (!reportedEarlier.contains(p.path())) {
        out.add(p);
      }
    }
    return sorted(out);
  }

  /** Returns the problems in file order (stable for problems at one place). */
  static List<ConfigProblem> sorted(List<ConfigProblem> problems) {
    List<ConfigProblem> out = new ArrayList<>(problems);
    out.sort(
        (a, b) ->
            a.location().line() != b.location().line()
                ? Integer.compare(a.location().line(), b.location().line())
                : Integer.compare(a.location().column(), b.location().column()));
    return out;
  }

  private void problem(String path, String message) {
    problems.add(new ConfigProblem(doc.locate(path), path, message));
  }

  /** Runs a conversion, turning its IdemConfigException into a problem at {@code path}. */
  private <T> @Nullable T orNull(Supplier<T> conversion, String path) {
    try {
      return conversion.get();
    } catch (IdemConfigException e) {
      problem(path, e.getMessage());
      return null;
    }
  }

  /** A duration no longer than {@link Durations#MAX}. */
  private @Nullable Duration duration(@Nullable String text, String path, Duration fallback) {
    return duration(text, path, fallback, Durations.MAX);
  }

  /** A duration no longer than the field's bound {@code max}. */
  private @Nullable Duration duration(
      @Nullable String text, String path, Duration fallback, Duration max) {
    if (text == null) {
      return fallback;
    }
    return orNull(() -> Durations.parse(text, max), path);
  }

  private <E extends Enum<E> & ConfigName> @Nullable E enumValue(
      @Nullable String text, E[] values, String path, E fallback) {
    if (text == null) {
      return fallback;
    }
    return orNull(() -> ConfigName.parse(text.trim(), values), path);
  }

  private @Nullable ServerSettings server(ServerProperties s) {
    String at = "server";
    Duration shutdown =
        duration(
            s.shutdownTimeout,
            at + ".shutdown_timeout",
            ServerSettings.DEFAULT_SHUTDOWN_TIMEOUT,
            ServerSettings.MAX_SHUTDOWN_TIMEOUT);
    String host = s.host == null ? ServerSettings.DEFAULT_HOST : s.host;
    int port = s.port == null ? ServerSettings.DEFAULT_PORT : s.port;
    int threads = s.maxThreads == null ? ServerSettings.DEFAULT_MAX_THREADS : s.maxThreads;
    String token = s.adminToken == null || s.adminToken.isEmpty() ? null : s.adminToken;
    // Each field on its own, so that the problem names the right line.
    orNull(
        () -> new ServerSettings(host, ServerSettings.DEFAULT_PORT, null, 200, Duration.ZERO, null),
        at + ".host");
    orNull(() -> new ServerSettings("h", port, null, 200, Duration.ZERO, null), at + ".port");
    orNull(() -> new ServerSettings("h", 1, token, 200, Duration.ZERO, null), at + ".admin_token");
    orNull(
        () -> new ServerSettings("h", 1, null, threads, Duration.ZERO, null), at + ".max_threads");
    orNull(
        () -> new ServerSettings("h", 1, null, 200, Duration.ZERO, s.logLevel), at + ".log_level");
    HttpLimits limits = httpLimits(s, at);
    orNull(
        () -> ServerSettings.defaults().withPort(port).withManagementPort(s.managementPort),
        at + ".management_port");
    if (shutdown == null || limits == null) {
      return null; // its problem is recorded
    }
    return new ServerSettings(
        host, port, token, threads, shutdown, s.logLevel, limits, s.managementPort);
  }

  private @Nullable HttpLimits httpLimits(ServerProperties s, String at) {
    HttpLimits d = HttpLimits.defaults();
    Duration read = duration(s.readTimeout, at + ".read_timeout", d.readTimeout());
    Duration idle = duration(s.idleTimeout, at + ".idle_timeout", d.idleTimeout());
    Long rate = size(s.minDataRate, at + ".min_data_rate", d.minDataRate());
    Long header = size(s.maxHeaderSize, at + ".max_header_size", d.maxHeaderSize());
    // Each field on its own, against the defaults of the others, so every problem names its line.
    boolean ok = read != null && idle != null && rate != null && header != null;
    if (read != null) {
      ok &= valid(d, read, -1, null, -1, at + ".read_timeout");
    }
    if (rate != null) {
      ok &= valid(d, null, rate, null, -1, at + ".min_data_rate");
    }
    if (idle != null) {
      ok &= valid(d, null, -1, idle, -1, at + ".idle_timeout");
    }
    if (header != null) {
      ok &= valid(d, null, -1, null, header, at + ".max_header_size");
    }
    return ok ? new HttpLimits(read, rate, idle, (int) (long) header) : null;
  }

  /** Whether the defaults with one field replaced are valid; else a problem at {@code path}. */
  private boolean valid(
      HttpLimits d,
      @Nullable Duration read,
      long rate,
      @Nullable Duration idle,
      long header,
      String path) {
    return orNull(
            () ->
                new HttpLimits(
                    read == null ? d.readTimeout() : read,
                    rate < 0 ? d.minDataRate() : rate,
                    idle == null ? d.idleTimeout() : idle,
                    header < 0 ? d.maxHeaderSize() : (int) Math.min(Integer.MAX_VALUE, header)),
            path)
        != null;
  }

  private @Nullable Long size(@Nullable String text, String path, long fallback) {
    if (text == null) {
      return fallback;
    }
    return orNull(() -> DataSizes.parse(text), path);
  }

  private @Nullable StoreSettings store(StoreProperties s, String at) {
    if (s.type == null) {
      problem(at + ".type", "is required; use rocksdb, memory, redis or jdbc");
      return null;
    }
    StoreType type = enumValue(s.type, StoreType.values(), at + ".type", StoreType.ROCKSDB);
    if (type == null) {
      return null;
    }
    boolean ok = true;
    ok &= onlyFor(s.path != null, type == StoreType.ROCKSDB, at + ".path", "rocksdb", type);
    ok &=
        onlyFor(
            s.url != null,
            type == StoreType.REDIS || type == StoreType.JDBC,
            at + ".url",
            "redis and jdbc",
            type);
    ok &=
        onlyFor(
            s.prefix != null,
            type == StoreType.REDIS || type == StoreType.JDBC,
            at + ".prefix",
            "redis and jdbc",
            type);
    ok &= onlyFor(s.username != null, type == StoreType.JDBC, at + ".username", "jdbc", type);
    ok &= onlyFor(s.password != null, type == StoreType.JDBC, at + ".password", "jdbc", type);
    ok &= onlyFor(s.maxKeys != null, type == StoreType.MEMORY, at + ".max_keys", "memory", type);
    boolean remote = type == StoreType.REDIS || type == StoreType.JDBC;
    ok &= onlyFor(s.timeout != null, remote, at + ".timeout", "redis and jdbc", type);
    ok &= onlyFor(s.failFast != null, remote, at + ".fail_fast", "redis and jdbc", type);
    ok &=
        onlyFor(
            s.reconnectDelay != null,
            type == StoreType.REDIS,
            at + ".reconnect_delay",
            "redis",
            type);
    ok &=
        onlyFor(
            s.requireDurable != null,
            type == StoreType.REDIS,
            at + ".require_durable",
            "redis",
            type);
    ok &=
        onlyFor(
            s.claimTimeout != null,
            type != StoreType.REDIS,
            at + ".claim_timeout",
            "rocksdb, memory and jdbc (stores with an outbox)",
            type);
    ok &= onlyFor(s.instanceId != null, type == StoreType.JDBC, at + ".instance_id", "jdbc", type);
    ok &=
        onlyFor(
            s.layout != null,
            type == StoreType.REDIS || type == StoreType.JDBC,
            at + ".layout",
            "redis and jdbc",
            type);
    ok &=
        onlyFor(
            s.compactShards != null,
            type == StoreType.REDIS,
            at + ".compact_shards",
            "redis",
            type);
    RedisLayout layout =
        type == StoreType.REDIS
            ? enumValue(s.layout, RedisLayout.values(), at + ".layout", RedisLayout.STANDARD)
            : null;
    ok &= type != StoreType.REDIS || layout != null;
    JdbcLayout jdbcLayout =
        type == StoreType.JDBC && s.layout != null
            ? orNull(() -> JdbcLayout.fromName(s.layout), at + ".layout")
            : null;
    ok &= type != StoreType.JDBC || s.layout == null || jdbcLayout != null;
    StoreFaults faults = faults(s, at);
    if (!ok || faults == null) {
      return null;
    }
    Path path = null;
    if (type == StoreType.ROCKSDB) {
      path = s.path == null ? StoreSettings.DEFAULT_PATH : toPath(s.path, at + ".path");
      if (path == null) {
        return null;
      }
    }
    RocksDbDurability durability = null;
    if (type == StoreType.ROCKSDB) {
      durability =
          enumValue(
              s.durability,
              RocksDbDurability.values(),
              at + ".durability",
              RocksDbDurability.GROUP_COMMIT);
      if (durability == null) {
        return null;
      }
    }
    RocksDbDurability finalDurability = durability;
    Path finalPath = path;
    Long maxKeys =
        type == StoreType.MEMORY && s.maxKeys == null
            ? Long.valueOf(StoreSettings.DEFAULT_MAX_KEYS)
            : s.maxKeys;
    String prefix = s.prefix;
    if (prefix == null && type == StoreType.REDIS) {
      prefix = StoreSettings.DEFAULT_PREFIX;
    } else if (prefix == null && type == StoreType.JDBC) {
      prefix = StoreSettings.DEFAULT_TABLE_PREFIX;
    }
    String finalPrefix = prefix;
    String field =
        s.url == null && (type == StoreType.REDIS || type == StoreType.JDBC) ? at : at + ".url";
    return orNull(
        () ->
            new StoreSettings(
                type,
                finalPath,
                finalDurability,
                s.url,
                finalPrefix,
                s.username,
                s.password,
                maxKeys,
                faults,
                s.instanceId,
                layout,
                s.compactShards,
                jdbcLayout),
        s.maxKeys != null && s.maxKeys < 1
            ? at + ".max_keys"
            : s.instanceId != null
                ? at + ".instance_id"
                : s.compactShards != null
                    ? at + ".compact_shards"
                    : s.prefix != null ? at + ".prefix" : field);
  }

  private @Nullable StoreFaults faults(StoreProperties s, String at) {
    Duration timeout = duration(s.timeout, at + ".timeout", StoreFaults.DEFAULT_TIMEOUT);
    Duration reconnect =
        duration(s.reconnectDelay, at + ".reconnect_delay", StoreFaults.DEFAULT_RECONNECT_DELAY);
    Duration claim =
        duration(s.claimTimeout, at + ".claim_timeout", StoreFaults.DEFAULT_CLAIM_TIMEOUT);
    if (timeout == null || reconnect == null || claim == null) {
      return null;
    }
    String field =
        s.timeout != null
            ? at + ".timeout"
            : s.reconnectDelay != null ? at + ".reconnect_delay" : at + ".claim_timeout";
    return orNull(
        () ->
            new StoreFaults(
                timeout,
                reconnect,
                Boolean.TRUE.equals(s.requireDurable),
                Boolean.TRUE.equals(s.failFast),
                claim),
        field);
  }

  private boolean onlyFor(
      boolean given, boolean allowed, String path, String types, StoreType type) {
    if (given && !allowed) {
      problem(
          path,
          "is only for a " + types + " store, not for type " + type.configName() + "; remove it");
      return false;
    }
    return true;
  }

  private @Nullable Path toPath(String text, String path) {
    if (text.isBlank()) {
      problem(path, "is blank; give a file or directory path");
      return null;
    }
    try {
      return Path.of(text);
    } catch (InvalidPathException e) {
      problem(path, "'" + text + "' is not a valid path: " + e.getReason());
      return null;
    }
  }

  private @Nullable PipelineSettings pipeline(
      PipelineProperties p, String at, @Nullable StoreSettings serviceStore) {
    int before = problems.size();
    if (p.id == null) {
      problem(at + ".id", "is required; name the pipeline (e.g. id: shop-orders)");
    }
    SourceSettings source = source(p.source, at);
    DedupSettings dedup = p.dedup == null ? null : dedup(p.dedup, at + ".dedup");
    OrderingSettings ordering = p.ordering == null ? null : ordering(p.ordering, at + ".ordering");
    String jq = null;
    if (p.transform != null) {
      if (p.transform.jq == null || p.transform.jq.isBlank()) {
        problem(
            at + ".transform.jq",
            "is required in transform; write a jq program (e.g. '{id: .id}')");
      } else if (orNull(() -> Transforms.jq(p.transform.jq), at + ".transform.jq") != null) {
        jq = p.transform.jq;
      }
    }
    DeliverSettings deliver = null;
    if (p.deliver == null) {
      problem(at, "needs deliver (e.g. deliver: { stdout: {} })");
    } else {
      deliver = deliver(p.deliver, at + ".deliver");
    }
    if (problems.size() > before || source == null || deliver == null || p.id == null) {
      return null;
    }
    // Rules between fields.
    StoreSettings effective = dedup != null && dedup.store() != null ? dedup.store() : serviceStore;
    if (dedup != null
        && dedup.maxKeys() != null
        && effective != null
        && effective.type() != StoreType.MEMORY) {
      problem(
          at + ".dedup.max_keys",
          "is only for the memory store; this pipeline's store is "
              + effective.type().configName()
              + " (bound a durable store with window instead)");
    }
    if (deliver.mode() == DeliveryMode.ASYNC) {
      if (dedup == null) {
        problem(
            at + ".deliver.mode",
            "async needs a dedup step (the outbox entry is written atomically with the key's"
                + " commit); add dedup, or use mode: sync");
      } else if (effective != null && !effective.type().hasOutbox()) {
        problem(
            at + ".deliver.mode",
            "async needs a store with an outbox (rocksdb, memory or jdbc); this pipeline's store is "
                + effective.type().configName()
                + "; use mode: sync or another store");
      }
    }
    if (dedup != null && dedup.mode() == DedupMode.REPLAY && deliver.mode() != DeliveryMode.SYNC) {
      problem(
          at + ".dedup.mode",
          "replay needs deliver.mode: sync (duplicates get the downstream's stored answer, which"
              + " async delivery does not wait for); use mode: drop or deliver.mode: sync");
    }
    if (problems.size() > before) {
      return null;
    }
    SourceSettings w = source;
    DeliverSettings d = deliver;
    String finalJq = jq;
    return orNull(() -> new PipelineSettings(p.id, w, dedup, ordering, finalJq, d), at + ".id");
  }

  /** The one source of a pipeline ({@code source.webhook}, {@code source.kafka}, ...). */
  private @Nullable SourceSettings source(@Nullable SourceProperties s, String at) {
    if (s == null) {
      problem(at, "needs a source: source.webhook.path (e.g. /hooks/shop/orders)");
      return null;
    }
    List<String> given = new ArrayList<>();
    if (s.webhook != null) {
      given.add("webhook");
    }
    if (given.size() > 1) {
      problem(
          at + ".source",
          "has " + String.join(" and ", given) + "; a pipeline has exactly one source");
      return null;
    }
    if (s.webhook != null) {
      return webhook(s.webhook, at + ".source.webhook");
    }
    problem(at + ".source", "needs a source: source.webhook.path (e.g. /hooks/shop/orders)");
    return null;
  }

  private @Nullable WebhookSettings webhook(WebhookProperties w, String at) {
    int before = problems.size();
    if (w.path == null) {
      problem(at + ".path", "is required (e.g. path: /hooks/shop/orders)");
    }
    Long maxBody =
        w.maxBody == null
            ? Long.valueOf(WebhookSettings.DEFAULT_MAX_BODY)
            : orNull(
                () -> DataSizes.parse(w.maxBody, WebhookSettings.MAX_MAX_BODY), at + ".max_body");
    int maxDepth = w.maxDepth == null ? WebhookSettings.DEFAULT_MAX_DEPTH : w.maxDepth;
    SignatureSettings signature =
        w.signature == null ? null : signature(w.signature, at + ".signature");
    JwtSettings jwt =
        w.auth == null || w.auth.jwt == null ? null : jwt(w.auth.jwt, at + ".auth.jwt");
    if (problems.size() > before || maxBody == null || w.path == null) {
      return null;
    }
    if (w.maxDepth != null && (maxDepth < 1 || maxDepth > SourceSettings.MAX_MAX_DEPTH)) {
      problem(
          at + ".max_depth",
          "must be from 1 to "
              + SourceSettings.MAX_MAX_DEPTH
              + " (the deepest nesting the key reader takes), got "
              + maxDepth);
      return null;
    }
    if (maxBody < 1 || maxBody > WebhookSettings.MAX_MAX_BODY) {
      problem(at + ".max_body", "must be from 1 byte to 64MiB, got " + w.maxBody);
      return null;
    }
    long mb = maxBody;
    return orNull(() -> new WebhookSettings(w.path, mb, maxDepth, signature, jwt), at + ".path");
  }

  private @Nullable JwtSettings jwt(JwtProperties j, String at) {
    int before = problems.size();
    Duration leeway =
        duration(j.leeway, at + ".leeway", JwtSettings.DEFAULT_LEEWAY, JwtSettings.MAX_LEEWAY);
    URI jwks = null;
    if (j.jwksUrl != null) {
      try {
        jwks = new URI(j.jwksUrl.trim());
      } catch (URISyntaxException e) {
        problem(at + ".jwks_url", "'" + j.jwksUrl + "' is not a URL (" + e.getReason() + ")");
      }
    }
    Path publicKey = null;
    if (j.publicKey != null) {
      try {
        publicKey = Path.of(j.publicKey.trim());
      } catch (InvalidPathException e) {
        problem(at + ".public_key", "'" + j.publicKey + "' is not a file path");
      }
    }
    List<String> algorithms = j.algorithms == null ? List.of() : j.algorithms;
    int depth =
        j.maxDelegationDepth == null
            ? JwtSettings.DEFAULT_MAX_DELEGATION_DEPTH
            : j.maxDelegationDepth;
    if (problems.size() > before || leeway == null) {
      return null;
    }
    URI url = jwks;
    Path pem = publicKey;
    return orNull(
        () -> new JwtSettings(j.issuer, j.audience, url, pem, j.secret, algorithms, leeway, depth),
        at);
  }

  private @Nullable SignatureSettings signature(SignatureProperties s, String at) {
    if (s.scheme == null) {
      problem(at + ".scheme", "is required; use stripe, github, shopify or standard");
      return null;
    }
    SignatureScheme scheme;
    try {
      scheme = SignatureScheme.fromConfig(s.scheme.trim());
    } catch (IdemConfigException e) {
      problem(
          at + ".scheme",
          "'" + s.scheme + "' is not allowed; use stripe, github, shopify or standard");
      return null;
    }
    List<String> secrets = secrets(s, scheme, at);
    Duration tolerance =
        duration(
            s.tolerance,
            at + ".tolerance",
            SignatureSettings.DEFAULT_TOLERANCE,
            SignatureSettings.MAX_TOLERANCE);
    if (tolerance == null || secrets == null) {
      return null;
    }
    return orNull(() -> new SignatureSettings(scheme, secrets, tolerance), at + ".tolerance");
  }

  /** Exactly one of {@code secret} and {@code secrets}; each secret checked for the scheme. */
  private @Nullable List<String> secrets(SignatureProperties s, SignatureScheme scheme, String at) {
    if (s.secret != null && s.secrets != null) {
      problem(
          at + ".secrets",
          "give secret or secrets, not both (secrets: [new, old] during a roll, then secret: new)");
      return null;
    }
    if (s.secrets == null) {
      if (s.secret == null || s.secret.isBlank()) {
        problem(
            at + ".secret",
            "is required; set the "
                + scheme.configName()
                + " signing secret, e.g. secret: \"${WEBHOOK_SECRET}\"");
        return null;
      }
      return checked(scheme, s.secret, at + ".secret") ? List.of(s.secret) : null;
    }
    if (s.secrets.isEmpty()) {
      problem(at + ".secrets", "is empty; list the new secret and the old one, e.g. [new, old]");
      return null;
    }
    if (s.secrets.size() > SignatureSettings.MAX_SECRETS) {
      problem(
          at + ".secrets",
          "has "
              + s.secrets.size()
              + " entries; give at most "
              + SignatureSettings.MAX_SECRETS
              + " (during a roll: the new secret and the old one)");
      return null;
    }
    boolean ok = true;
    for (int i = 0; i < s.secrets.size(); i++) {
      String secret = s.secrets.get(i);
      String where = at + ".secrets[" + i + "]";
      if (secret == null) {
        problem(where, "is empty; give the secret's text");
        ok = false;
        continue;
      }
      ok &= checked(scheme, secret, where);
    }
    return ok ? List.copyOf(s.secrets) : null;
  }

  private boolean checked(SignatureScheme scheme, String secret, String where) {
    try {
      SignatureSettings.checkSecret(scheme, secret);
      return true;
    } catch (IdemConfigException e) {
      problem(where, e.getMessage());
      return false;
    }
  }

  private @Nullable KeySpec keySpec(@Nullable JsonNode key, String at) {
    if (key == null || key.isNull()) {
      return null;
    }
    if (key.isTextual()) {
      KeySpec spec = orNull(() -> KeySpec.single(key.asText()), at);
      return spec == null ? null : checkRule(spec, at);
    }
    if (key.isArray()) {
      List<String> parts = new ArrayList<>();
      for (int i = 0; i < key.size(); i++) {
        JsonNode e = key.get(i);
        if (!e.isTextual()) {
          problem(at + "[" + i + "]", "must be a field path or header(\"...\"), as text");
          return null;
        }
        parts.add(e.asText());
      }
      KeySpec spec = orNull(() -> new KeySpec(parts, true), at);
      return spec == null ? null : checkRule(spec, at);
    }
    problem(at, "must be a field path (source.id), a list of them ([a, b]) or header(\"X-Id\")");
    return null;
  }

  /** Parses the rule as the pipeline will, so a bad field path or header is a located error. */
  private @Nullable KeySpec checkRule(KeySpec spec, String at) {
    for (int i = 0; i < spec.expressions().size(); i++) {
      String e = spec.expressions().get(i);
      String where = spec.composite() ? at + "[" + i + "]" : at;
      if (orNull(() -> KeyRule.parse(e), where) == null) {
        return null;
      }
    }
    return spec;
  }

  private @Nullable DedupSettings dedup(DedupProperties d, String at) {
    int before = problems.size();
    KeySpec key = keySpec(d.key, at + ".key");
    if (d.key != null && d.key.isNull()) {
      problem(at + ".key", "is empty; write a field path, or remove key for the default key");
    }
    DedupConfig.Builder b = DedupConfig.custom();
    if (d.window != null && d.window.trim().equalsIgnoreCase("none")) {
      b.noTtl();
    } else {
      Duration window =
          duration(d.window, at + ".window", DedupConfig.DEFAULT_TTL, DedupSettings.MAX_WINDOW);
      if (window != null) {
        if (window.toMillis() < 1) {
          problem(at + ".window", "must be at least 1ms, or none for no window");
        } else {
          b.ttl(window);
        }
      }
    }
    Expiry expiry =
        d.expiry == null ? Expiry.SLIDING : orNull(() -> expiryOf(d.expiry.trim()), at + ".expiry");
    if (expiry != null) {
      b.expiry(expiry);
    }
    Duration lease =
        duration(d.lease, at + ".lease", DedupSettings.DEFAULT_LEASE, DedupSettings.MAX_LEASE);
    if (lease != null) {
      if (lease.toMillis() < 1) {
        problem(at + ".lease", "must be at least 1ms");
      } else {
        b.lease(lease);
      }
    }
    DedupMode mode = enumValue(d.mode, DedupMode.values(), at + ".mode", DedupMode.DROP);
    if (d.maxKeys != null && d.maxKeys < 1) {
      problem(at + ".max_keys", "must be at least 1, got " + d.maxKeys);
    }
    StoreSettings store = d.store == null ? null : store(d.store, at + ".store");
    if (d.store != null && store == null && problems.size() == before) {
      problem(at + ".store", "is not a valid store");
    }
    if (problems.size() > before || mode == null) {
      return null;
    }
    DedupConfig config = orNull(b::build, at);
    if (config == null) {
      return null;
    }
    return orNull(() -> new DedupSettings(key, config, d.maxKeys, mode, store), at);
  }

  private static Expiry expiryOf(String text) {
    return switch (text) {
      case "sliding" -> Expiry.SLIDING;
      case "fixed" -> Expiry.FIXED;
      default ->
          throw new IdemConfigException("'" + text + "' is not allowed; use sliding or fixed");
    };
  }

  private @Nullable OrderingSettings ordering(OrderingProperties o, String at) {
    int before = problems.size();
    KeySpec key = keySpec(o.key, at + ".key");
    if (o.key == null || o.key.isNull()) {
      problem(
          at + ".key",
          "is required; name the field whose events run in order (e.g. source.customer_id)");
    }
    OrderingMode mode = enumValue(o.mode, OrderingMode.values(), at + ".mode", OrderingMode.STRICT);
    Duration ttl =
        duration(
            o.lockTtl,
            at + ".lock_ttl",
            OrderingSettings.DEFAULT_LOCK_TTL,
            OrderingSettings.MAX_LOCK_TTL);
    if (problems.size() > before || key == null || mode == null || ttl == null) {
      return null;
    }
    return orNull(() -> new OrderingSettings(key, mode, ttl), at + ".lock_ttl");
  }

  private @Nullable DeliverSettings deliver(DeliverProperties d, String at) {
    int before = problems.size();
    DeliveryMode mode = enumValue(d.mode, DeliveryMode.values(), at + ".mode", DeliveryMode.SYNC);
    List<String> sinks = new ArrayList<>();
    for (String s : new String[] {"http", "file", "stdout", "jdbc"}) {
      if (doc.has(at + "." + s)) {
        sinks.add(s);
      }
    }
    sinks.sort(
        (a, b) -> {
          ConfigLocation la = doc.locate(at + "." + a);
          ConfigLocation lb = doc.locate(at + "." + b);
          return la.line() != lb.line()
              ? Integer.compare(la.line(), lb.line())
              : Integer.compare(la.column(), lb.column());
        });
    if (sinks.isEmpty()) {
      problem(at, "needs one sink: http, file, stdout or jdbc (e.g. stdout: {})");
      return null;
    }
    if (sinks.size() > 1) {
      problem(
          at + "." + sinks.get(1),
          "a pipeline delivers to one sink; remove "
              + String.join(" or ", sinks.subList(1, sinks.size())));
      return null;
    }
    SinkSettings sink =
        switch (sinks.get(0)) {
          case "http" -> d.http == null ? missing(at + ".http", "url") : http(d.http, at + ".http");
          case "file" ->
              d.file == null || d.file.path == null
                  ? missing(at + ".file", "path")
                  : file(d.file.path, at + ".file.path");
          case "stdout" -> new SinkSettings.Stdout();
          default -> d.jdbc == null ? missing(at + ".jdbc", "url") : jdbc(d.jdbc, at + ".jdbc");
        };
    Integer retries = d.retries;
    if (d.http != null && d.http.retries != null) {
      if (d.retries != null) {
        problem(at + ".http.retries", "retries is given twice (also deliver.retries); keep one");
      }
      retries = d.http.retries;
    }
    // Retries and backoffs are checked even when the sink or mode is wrong: all problems at once.
    RetryPolicy defaults = mode == DeliveryMode.ASYNC ? RetryPolicy.DEFAULT : SYNC_DEFAULT_RETRY;
    int r = retries == null ? defaults.retries() : retries;
    String retriesAt = d.retries != null ? at + ".retries" : at + ".http.retries";
    if (r < 0 || r > 100) {
      problem(retriesAt, "must be from 0 to 100, got " + r);
    }
    Duration backoff =
        duration(
            d.backoff, at + ".backoff", defaults.initialBackoff(), DeliverSettings.MAX_BACKOFF);
    Duration maxBackoff =
        duration(
            d.maxBackoff, at + ".max_backoff", defaults.maxBackoff(), DeliverSettings.MAX_BACKOFF);
    if (mode == null
        || sink == null
        || backoff == null
        || maxBackoff == null
        || problems.size() > before) {
      return null;
    }
    if (d.backoff != null && d.maxBackoff == null && maxBackoff.compareTo(backoff) < 0) {
      maxBackoff = backoff;
    }
    Duration finalMax = maxBackoff;
    RetryPolicy retry =
        orNull(
            () -> new RetryPolicy(r, backoff, finalMax),
            d.maxBackoff != null ? at + ".max_backoff" : at + ".backoff");
    if (retry == null) {
      return null;
    }
    return new DeliverSettings(mode, retry, sink);
  }

  private @Nullable SinkSettings missing(String at, String field) {
    problem(at + "." + field, "is required");
    return null;
  }

  private @Nullable SinkSettings http(IdemProperties.HttpProperties h, String at) {
    if (h.url == null) {
      return missing(at, "url");
    }
    URI url;
    try {
      url = new URI(h.url.trim());
    } catch (URISyntaxException e) {
      problem(at + ".url", "'" + Masking.url(h.url) + "' is not a URL: " + e.getReason());
      return null;
    }
    Duration timeout =
        duration(
            h.timeout,
            at + ".timeout",
            SinkSettings.Http.DEFAULT_TIMEOUT,
            SinkSettings.Http.MAX_TIMEOUT);
    if (timeout == null) {
      return null;
    }
    Map<String, String> headers = h.headers == null ? Map.of() : h.headers;
    for (Map.Entry<String, String> e : headers.entrySet()) {
      if (e.getValue() == null) {
        problem(at + ".headers." + e.getKey(), "has no value");
        return null;
      }
      if (!e.getKey().matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
        problem(at + ".headers." + e.getKey(), "is not a valid header name");
        return null;
      }
    }
    boolean headerProblem =
        headers.keySet().stream()
            .anyMatch(
                k ->
                    k.toLowerCase(Locale.ROOT).equals("idempotency-key")
                        || k.toLowerCase(Locale.ROOT).equals("content-length")
                        || k.toLowerCase(Locale.ROOT).equals("host"));
    return orNull(
        () -> new SinkSettings.Http(url, headers, timeout),
        headerProblem
            ? at + ".headers"
            : h.timeout != null && timeout.toMillis() < 1 ? at + ".timeout" : at + ".url");
  }

  private @Nullable SinkSettings file(String path, String at) {
    Path p = toPath(path, at);
    return p == null ? null : new SinkSettings.File(p);
  }

  private @Nullable SinkSettings jdbc(IdemProperties.JdbcProperties j, String at) {
    if (j.url == null) {
      return missing(at, "url");
    }
    if (j.table == null) {
      return missing(at, "table");
    }
    return orNull(
        () -> new SinkSettings.Jdbc(j.url, j.table, j.username, j.password),
        j.url.startsWith("jdbc:") ? at + ".table" : at + ".url");
  }
}
