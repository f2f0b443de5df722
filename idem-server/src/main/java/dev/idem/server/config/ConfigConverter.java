package dev.idem.server.config;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.DedupConfig;
import dev.idem.Expiry;
import dev.idem.IdemConfigException;
import dev.idem.key.KeyRule;
import dev.idem.server.auth.HeaderCallers;
import dev.idem.server.auth.JwtSettings;
import dev.idem.server.auth.MtlsSettings;
import dev.idem.server.config.IdemProperties.DedupProperties;
import dev.idem.server.config.IdemProperties.DeliverProperties;
import dev.idem.server.config.IdemProperties.JwtProperties;
import dev.idem.server.config.IdemProperties.OrderingProperties;
import dev.idem.server.config.IdemProperties.PipelineProperties;
import dev.idem.server.config.IdemProperties.ServerProperties;
import dev.idem.server.config.IdemProperties.SignatureProperties;
import dev.idem.server.config.IdemProperties.SourceProperties;
import dev.idem.server.config.IdemProperties.StoreProperties;
import dev.idem.server.config.IdemProperties.TlsProperties;
import dev.idem.server.config.IdemProperties.WebhookProperties;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.signature.SignatureScheme;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.tls.ServerTls;
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
 *   <li>{@code deliver} names exactly one sink; {@code retries} is given at most once;
 *   <li>{@code window: forever} (or {@code none}) on the memory store needs {@code max_keys};
 *   <li>{@code tenant} needs {@code dedup}; {@code claim(...)} needs {@code auth.jwt}; with {@code
 *       tenant} the memory store takes no {@code dedup.max_keys} (each tenant is bounded by {@code
 *       store.max_keys});
 *   <li>a source has at most one of {@code auth.jwt}, {@code auth.mtls}, {@code
 *       auth.principal_header}; {@code auth.mtls} needs {@code server.tls} and a CA ({@code
 *       server.tls.client_ca} or its own {@code ca}).
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
    if (server != null) {
      for (int i = 0; i < pipelines.size(); i++) {
        WebhookSettings hook = pipelines.get(i).webhook();
        MtlsSettings m = hook == null ? null : hook.mtls();
        if (m == null) {
          continue;
        }
        String at = "pipelines[" + i + "].source.webhook.auth.mtls";
        if (server.tls() == null) {
          problem(
              at,
              "needs TLS on the listener; set server.tls (certificate and private_key, or"
                  + " keystore)");
        } else if (server.tls().clientCa() == null && m.ca() == null) {
          problem(
              at,
              "needs the CA of its callers' certificates; set server.tls.client_ca or"
                  + " auth.mtls.ca");
        }
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
    TlsSettings tls = s.tls == null ? null : tls(s.tls, at + ".tls");
    if (shutdown == null || limits == null || (s.tls != null && tls == null)) {
      return null; // its problem is recorded
    }
    return new ServerSettings(
        host, port, token, threads, shutdown, s.logLevel, limits, s.managementPort, tls);
  }

  private @Nullable TlsSettings tls(TlsProperties t, String at) {
    int before = problems.size();
    Path certificate = t.certificate == null ? null : toPath(t.certificate, at + ".certificate");
    Path key = t.privateKey == null ? null : toPath(t.privateKey, at + ".private_key");
    Path keystore = t.keystore == null ? null : toPath(t.keystore, at + ".keystore");
    Path clientCa = t.clientCa == null ? null : toPath(t.clientCa, at + ".client_ca");
    Duration reload =
        duration(t.reloadInterval, at + ".reload_interval", TlsSettings.DEFAULT_RELOAD_INTERVAL);
    if (problems.size() > before || reload == null) {
      return null;
    }
    String field =
        t.reloadInterval != null
            ? at + ".reload_interval"
            : t.keystore != null
                ? at + ".keystore"
                : t.certificate != null ? at + ".certificate" : at;
    TlsSettings tls =
        orNull(
            () -> new TlsSettings(certificate, key, keystore, t.keystorePassword, clientCa, reload),
            field);
    if (tls == null) {
      return null;
    }
    // Read the files now, so that a bad file is a located problem rather than a failed start.
    if (orNull(() -> ServerTls.check(tls), at) == null) {
      return null;
    }
    return tls;
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
    if (ordering != null && ordering.sequence() != null && p.dedup == null) {
      problem(
          at + ".ordering.sequence",
          "needs a dedup step: the last sequence of each key is kept in the dedup store; add dedup"
              + " (e.g. dedup: { key: source.id })");
    }
    if (ordering != null && ordering.onFailure() == OrderingFailure.BLOCK && p.dedup == null) {
      problem(
          at + ".ordering.on_failure",
          "block needs a dedup step: a failing event is recognised by its key, and skipping it"
              + " commits that key; add dedup (e.g. dedup: { key: source.id })");
    }
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
    TenantSpec tenant =
        p.tenant == null ? null : orNull(() -> TenantSpec.parse(p.tenant), at + ".tenant");
    if (p.tenant != null && tenant == null) {
      return null;
    }
    // Rules between fields.
    KafkaStateSettings localState = source instanceof KafkaSourceSettings ks ? ks.state() : null;
    StoreSettings effective =
        localState != null
            ? null // source.kafka.state keeps the keys: no store applies (kafkaStateRules)
            : dedup != null && dedup.store() != null ? dedup.store() : serviceStore;
    if (tenant != null && dedup == null) {
      problem(at + ".tenant", "scopes the dedup keys; add dedup, or remove tenant");
    }
    WebhookSettings hook = source instanceof WebhookSettings w ? w : null;
    if (tenant != null
        && tenant.source() == TenantSpec.Source.CLAIM
        && (hook == null || hook.jwt() == null)) {
      problem(
          at + ".tenant",
          "claim(\""
              + tenant.name()
              + "\") reads the caller's JWT; set source.webhook.auth.jwt,"
              + " or read the tenant from a header or field");
    }
    boolean memory = effective != null && effective.type() == StoreType.MEMORY;
    if (tenant != null && dedup != null && dedup.maxKeys() != null && memory) {
      problem(
          at + ".dedup.max_keys",
          "with tenant, the memory store bounds each tenant's keys by store.max_keys; set that"
              + " instead");
    } else if (dedup != null && dedup.config().ttl() == null && memory && dedup.maxKeys() == null) {
      problem(
          at + ".dedup.window",
          tenant != null
              ? "forever is for durable stores (rocksdb, jdbc, redis); the memory store loses its"
                  + " keys on restart; give a window"
              : "forever on the memory store needs dedup.max_keys to bound it (the keys are lost"
                  + " on restart anyway); use a durable store (rocksdb, jdbc, redis) for ids"
                  + " that must be kept, or give a window");
    }
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
    if (localState != null) {
      kafkaStateRules(at, dedup, ordering, deliver);
    } else if (deliver.mode() == DeliveryMode.ASYNC) {
      if (dedup == null) {
        problem(
            at + ".deliver.mode",
            "async needs a dedup step (the outbox entry is written atomically with the key's"
                + " commit); add dedup, or use mode: sync");
      } else if (effective != null && !effective.type().hasOutbox()) {
        problem(
            at + ".deliver.mode",
            "async needs a store with an outbox (rocksdb, memory, jdbc or redis); this pipeline's"
                + " store is "
                + effective.type().configName()
                + "; use mode: sync or another store");
      } else if (effective != null && redisClusterWithoutHashTag(effective)) {
        problem(
            at + ".deliver.mode",
            "async on a Redis Cluster needs the dedup keys and the outbox in one slot: give the"
                + " store a prefix with a hash tag (e.g. prefix: 'idem:{"
                + p.id
                + "}:'; all its keys then live on one shard), or use mode: sync");
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
    TenantSpec t = tenant;
    return orNull(() -> new PipelineSettings(p.id, w, dedup, ordering, finalJq, d, t), at + ".id");
  }

  /**
   * What {@code source.kafka.state} needs: a dedup step whose keys it keeps (and no other store),
   * sync delivery (the offset commit, after the changelog flush, is the durable accept; there is no
   * outbox), and no ordering step (a partition's records are already processed in order, one at a
   * time).
   */
  private void kafkaStateRules(
      String at,
      @Nullable DedupSettings dedup,
      @Nullable OrderingSettings ordering,
      DeliverSettings deliver) {
    if (dedup == null) {
      problem(
          at + ".source.kafka.state",
          "keeps the pipeline's dedup keys; add dedup (e.g. dedup: { key: header(\"X-Id\") }), or"
              + " remove state");
    } else {
      if (dedup.store() != null) {
        problem(
            at + ".dedup.store",
            "cannot be used with source.kafka.state, which keeps this pipeline's keys; remove one"
                + " of them");
      }
      if (dedup.maxKeys() != null) {
        problem(
            at + ".dedup.max_keys",
            "is only for the memory store; source.kafka.state keeps keys on disk: bound them with"
                + " window");
      }
    }
    if (deliver.mode() == DeliveryMode.ASYNC) {
      problem(
          at + ".deliver.mode",
          "async needs a store with an outbox, and source.kafka.state has none: use mode: sync (an"
              + " offset is committed only after the record's key change is in the changelog), or"
              + " a shared store (redis, jdbc) instead of state");
    }
    if (ordering != null) {
      problem(
          at + ".ordering",
          "cannot be used with source.kafka.state: records of one partition are already handled"
              + " one at a time in offset order, so produce the records keyed by the ordering key"
              + " (one key, one partition) and remove ordering; or use a shared store (redis,"
              + " jdbc) for ordering across partitions");
    }
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
    if (s.nats != null) {
      given.add("nats");
    }
    if (s.rabbitmq != null) {
      given.add("rabbitmq");
    }
    if (s.kafka != null) {
      given.add("kafka");
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
    if (s.nats != null) {
      return nats(s.nats, at + ".source.nats");
    }
    if (s.rabbitmq != null) {
      return rabbitmq(s.rabbitmq, at + ".source.rabbitmq");
    }
    if (s.kafka != null) {
      return kafka(s.kafka, at + ".source.kafka");
    }
    problem(at + ".source", "needs a source: source.webhook.path (e.g. /hooks/shop/orders)");
    return null;
  }

  private @Nullable KafkaSourceSettings kafka(IdemProperties.KafkaProperties k, String at) {
    int before = problems.size();
    if (k.bootstrap == null) {
      problem(at + ".bootstrap", "is required (e.g. bootstrap: 127.0.0.1:9092)");
    }
    if (k.topics == null || k.topics.isEmpty()) {
      problem(at + ".topics", "is required: the topics to consume (e.g. topics: [orders])");
    }
    if (k.group == null) {
      problem(at + ".group", "is required: the consumer group id (e.g. group: ingest)");
    }
    KafkaSourceSettings.BadRecord onBad =
        enumValue(
            k.onBadRecord,
            KafkaSourceSettings.BadRecord.values(),
            at + ".on_bad_record",
            KafkaSourceSettings.BadRecord.DEAD_LETTER);
    Duration backoff =
        duration(
            k.backoff,
            at + ".backoff",
            KafkaSourceSettings.DEFAULT_BACKOFF,
            KafkaSourceSettings.MAX_MAX_BACKOFF);
    Duration maxBackoff =
        duration(
            k.maxBackoff,
            at + ".max_backoff",
            KafkaSourceSettings.DEFAULT_MAX_BACKOFF,
            KafkaSourceSettings.MAX_MAX_BACKOFF);
    Long maxBody =
        k.maxBody == null
            ? Long.valueOf(WebhookSettings.DEFAULT_MAX_BODY)
            : orNull(
                () -> DataSizes.parse(k.maxBody, WebhookSettings.MAX_MAX_BODY), at + ".max_body");
    if (problems.size() > before
        || onBad == null
        || backoff == null
        || maxBackoff == null
        || maxBody == null) {
      return null;
    }
    String field;
    if (k.onBadRecord == null && k.deadLetterTopic == null) {
      field = ".dead_letter_topic";
    } else if (k.maxPollRecords != null && (k.maxPollRecords < 1 || k.maxPollRecords > 10_000)) {
      field = ".max_poll_records";
    } else if (k.maxAttempts != null && (k.maxAttempts < 1 || k.maxAttempts > 100)) {
      field = ".max_attempts";
    } else if (k.maxDepth != null) {
      field = ".max_depth";
    } else {
      field = k.deadLetterTopic != null ? ".dead_letter_topic" : ".properties";
    }
    Duration max =
        k.backoff != null && k.maxBackoff == null && maxBackoff.compareTo(backoff) < 0
            ? backoff
            : maxBackoff;
    long mb = maxBody;
    KafkaStateSettings state = null;
    if (k.state != null) {
      state = kafkaState(k.state, at + ".state");
      if (state == null) {
        return null;
      }
      if (k.topics.size() != 1) {
        problem(
            at + ".state",
            "keeps the keys of one topic's partitions; consume one topic in this pipeline (give"
                + " each topic its own pipeline), got topics "
                + k.topics);
        return null;
      }
    }
    KafkaStateSettings finalState = state;
    return orNull(
        () ->
            new KafkaSourceSettings(
                k.bootstrap,
                k.topics,
                k.group,
                k.maxPollRecords == null
                    ? KafkaSourceSettings.DEFAULT_MAX_POLL_RECORDS
                    : k.maxPollRecords,
                onBad,
                k.deadLetterTopic,
                k.maxAttempts == null ? KafkaSourceSettings.DEFAULT_MAX_ATTEMPTS : k.maxAttempts,
                backoff,
                max,
                mb,
                k.maxDepth == null ? WebhookSettings.DEFAULT_MAX_DEPTH : k.maxDepth,
                k.properties == null ? Map.of() : k.properties,
                finalState),
        at + field);
  }

  /** {@code source.kafka.state}: the partitioned local dedup state. */
  private @Nullable KafkaStateSettings kafkaState(
      IdemProperties.KafkaStateProperties st, String at) {
    if (st.dir == null || st.dir.isBlank()) {
      problem(
          at + ".dir",
          "is required: this instance's local state directory, emptied at start (e.g. dir:"
              + " /var/lib/idem/kafka-state; one per instance)");
      return null;
    }
    String field =
        st.replicationFactor != null
                && (st.replicationFactor < 1 || st.replicationFactor > Short.MAX_VALUE)
            ? ".replication_factor"
            : st.changelogTopic != null ? ".changelog_topic" : ".dir";
    return orNull(
        () ->
            new KafkaStateSettings(
                Path.of(st.dir),
                st.changelogTopic,
                st.replicationFactor == null
                    ? KafkaStateSettings.DEFAULT_REPLICATION_FACTOR
                    : st.replicationFactor),
        at + field);
  }

  private @Nullable RabbitMqSourceSettings rabbitmq(
      IdemProperties.RabbitMqProperties r, String at) {
    int before = problems.size();
    URI uri = amqpUri(r.uri, at + ".uri");
    if (r.queue == null) {
      problem(at + ".queue", "is required; name the queue to consume (e.g. queue: orders)");
    }
    int prefetch = r.prefetch == null ? RabbitMqSourceSettings.DEFAULT_PREFETCH : r.prefetch;
    int consumers =
        r.consumers == null ? RabbitMqSourceSettings.defaultConsumers(prefetch) : r.consumers;
    int attempts =
        r.maxAttempts == null ? RabbitMqSourceSettings.DEFAULT_MAX_ATTEMPTS : r.maxAttempts;
    Duration delay =
        duration(
            r.requeueDelay,
            at + ".requeue_delay",
            RabbitMqSourceSettings.DEFAULT_REQUEUE_DELAY,
            RabbitMqSourceSettings.MAX_DELAY);
    Duration maxDelay =
        duration(
            r.maxRequeueDelay,
            at + ".max_requeue_delay",
            RabbitMqSourceSettings.DEFAULT_MAX_REQUEUE_DELAY,
            RabbitMqSourceSettings.MAX_DELAY);
    Long maxBody =
        r.maxBody == null
            ? Long.valueOf(WebhookSettings.DEFAULT_MAX_BODY)
            : orNull(
                () -> DataSizes.parse(r.maxBody, WebhookSettings.MAX_MAX_BODY), at + ".max_body");
    int maxDepth = r.maxDepth == null ? WebhookSettings.DEFAULT_MAX_DEPTH : r.maxDepth;
    if (problems.size() > before
        || uri == null
        || r.queue == null
        || delay == null
        || maxDelay == null
        || maxBody == null) {
      return null;
    }
    if (r.requeueDelay != null && r.maxRequeueDelay == null && maxDelay.compareTo(delay) < 0) {
      maxDelay = delay;
    }
    String field =
        r.prefetch != null && (prefetch < 1 || prefetch > RabbitMqSourceSettings.MAX_PREFETCH)
            ? ".prefetch"
            : r.consumers != null
                    && (consumers < 1 || consumers > RabbitMqSourceSettings.MAX_CONSUMERS)
                ? ".consumers"
                : r.maxAttempts != null && (attempts < 1 || attempts > 1000)
                    ? ".max_attempts"
                    : maxDelay.compareTo(delay) < 0
                        ? ".max_requeue_delay"
                        : r.maxDepth != null && (maxDepth < 1 || maxDepth > MAX_DEPTH_LIMIT)
                            ? ".max_depth"
                            : ".queue";
    Duration d = delay;
    Duration md = maxDelay;
    long mb = maxBody;
    return orNull(
        () ->
            new RabbitMqSourceSettings(
                uri, r.queue, prefetch, consumers, attempts, d, md, mb, maxDepth),
        at + field);
  }

  private static final int MAX_DEPTH_LIMIT = SourceSettings.MAX_MAX_DEPTH;

  /** An {@code amqp://} URI, or null after a problem. */
  private @Nullable URI amqpUri(@Nullable String text, String at) {
    if (text == null) {
      problem(at, "is required (e.g. uri: amqp://guest:guest@127.0.0.1:5672/)");
      return null;
    }
    URI uri;
    try {
      uri = new URI(text.trim());
    } catch (URISyntaxException e) {
      problem(at, "'" + Masking.url(text) + "' is not a URI: " + e.getReason());
      return null;
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("amqp") && !scheme.equals("amqps") || uri.getHost() == null) {
      problem(
          at,
          "'"
              + Masking.url(text)
              + "' is not an AMQP URI (e.g. amqp://guest:guest@127.0.0.1:5672/)");
      return null;
    }
    return uri;
  }

  private @Nullable NatsSourceSettings nats(IdemProperties.NatsSourceProperties n, String at) {
    int before = problems.size();
    if (n.stream == null) {
      problem(at + ".stream", "is required; name the JetStream stream to consume (e.g. ORDERS)");
    }
    if (n.durable == null) {
      problem(at + ".durable", "is required; name the durable consumer (e.g. idem-orders)");
    }
    Duration ackWait =
        duration(
            n.ackWait, at + ".ack_wait", NatsSourceSettings.DEFAULT_ACK_WAIT, Duration.ofHours(12));
    Duration backoff =
        duration(
            n.backoff, at + ".backoff", NatsSourceSettings.DEFAULT_BACKOFF, Duration.ofHours(1));
    Duration maxBackoff =
        duration(
            n.maxBackoff,
            at + ".max_backoff",
            backoff != null && n.maxBackoff == null && n.backoff != null
                ? max(backoff, NatsSourceSettings.DEFAULT_MAX_BACKOFF)
                : NatsSourceSettings.DEFAULT_MAX_BACKOFF,
            Duration.ofHours(1));
    Long maxBody =
        n.maxBody == null
            ? Long.valueOf(NatsSourceSettings.DEFAULT_MAX_BODY)
            : orNull(
                () -> DataSizes.parse(n.maxBody, NatsSourceSettings.MAX_MAX_BODY),
                at + ".max_body");
    if (problems.size() > before
        || ackWait == null
        || backoff == null
        || maxBackoff == null
        || maxBody == null) {
      return null;
    }
    String url = n.url == null ? NatsSourceSettings.DEFAULT_URL : n.url.trim();
    int batch = n.batch == null ? NatsSourceSettings.DEFAULT_BATCH : n.batch;
    long maxDeliver = n.maxDeliver == null ? -1 : n.maxDeliver;
    int attempts = n.maxAttempts == null ? NatsSourceSettings.DEFAULT_MAX_ATTEMPTS : n.maxAttempts;
    int depth = n.maxDepth == null ? NatsSourceSettings.DEFAULT_MAX_DEPTH : n.maxDepth;
    long body = maxBody;
    // Each field checked against the defaults of the others, so the problem names its line.
    NatsSourceSettings d = NatsSourceSettings.of(NatsSourceSettings.DEFAULT_URL, "s", "d", null);
    boolean ok = true;
    ok &= natsField(() -> NatsSourceSettings.checkUrl(url), at + ".url");
    ok &= natsField(() -> NatsSourceSettings.of(d.url(), n.stream, "d", null), at + ".stream");
    ok &= natsField(() -> NatsSourceSettings.of(d.url(), "s", n.durable, null), at + ".durable");
    ok &= natsField(() -> NatsSourceSettings.of(d.url(), "s", "d", n.subject), at + ".subject");
    ok &=
        natsField(
            () -> withNumbers(d, batch, ackWait, -1, 1, null, d.backoff(), d.maxBackoff(), 1, 1),
            n.batch != null ? at + ".batch" : at + ".ack_wait");
    ok &=
        natsField(
            () ->
                withNumbers(
                    d,
                    1,
                    d.ackWait(),
                    maxDeliver,
                    attempts,
                    null,
                    d.backoff(),
                    d.maxBackoff(),
                    1,
                    1),
            n.maxAttempts != null ? at + ".max_attempts" : at + ".max_deliver");
    ok &=
        natsField(
            () ->
                withNumbers(
                    d, 1, d.ackWait(), -1, 1, n.deadLetter, d.backoff(), d.maxBackoff(), 1, 1),
            at + ".dead_letter");
    ok &=
        natsField(
            () -> withNumbers(d, 1, d.ackWait(), -1, 1, null, backoff, maxBackoff, 1, 1),
            n.maxBackoff != null ? at + ".max_backoff" : at + ".backoff");
    ok &=
        natsField(
            () ->
                withNumbers(
                    d, 1, d.ackWait(), -1, 1, null, d.backoff(), d.maxBackoff(), body, depth),
            n.maxDepth != null ? at + ".max_depth" : at + ".max_body");
    if (!ok) {
      return null;
    }
    return orNull(
        () ->
            new NatsSourceSettings(
                url,
                n.stream,
                n.durable,
                n.subject,
                batch,
                ackWait,
                maxDeliver,
                attempts,
                n.deadLetter,
                backoff,
                maxBackoff,
                body,
                depth),
        at);
  }

  private static NatsSourceSettings withNumbers(
      NatsSourceSettings d,
      int batch,
      Duration ackWait,
      long maxDeliver,
      int attempts,
      @Nullable String deadLetter,
      Duration backoff,
      Duration maxBackoff,
      long maxBody,
      int maxDepth) {
    return new NatsSourceSettings(
        d.url(),
        d.stream(),
        d.durable(),
        null,
        batch,
        ackWait,
        maxDeliver,
        attempts,
        deadLetter,
        backoff,
        maxBackoff,
        maxBody,
        maxDepth);
  }

  /** Runs a check; its problem is reported at {@code path}, without repeating the field name. */
  private boolean natsField(Runnable check, String path) {
    try {
      check.run();
      return true;
    } catch (IdemConfigException e) {
      String field = path.substring(path.lastIndexOf('.') + 1);
      String m = String.valueOf(e.getMessage());
      problem(path, m.startsWith(field + ": ") ? m.substring(field.length() + 2) : m);
      return false;
    }
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
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
    MtlsSettings mtls = null;
    if (w.auth != null && w.auth.mtls != null) {
      String ca = w.auth.mtls.ca;
      Path caPath = ca == null ? null : toPath(ca, at + ".auth.mtls.ca");
      if (ca == null || caPath != null) {
        mtls = orNull(() -> new MtlsSettings(caPath), at + ".auth.mtls.ca");
      }
    }
    String principalHeader = w.auth == null ? null : w.auth.principalHeader;
    if (principalHeader != null) {
      orNull(
          () -> {
            HeaderCallers.checkName(principalHeader);
            return principalHeader;
          },
          at + ".auth.principal_header");
    }
    if (w.auth != null
        && (w.auth.jwt != null ? 1 : 0)
                + (w.auth.mtls != null ? 1 : 0)
                + (w.auth.principalHeader != null ? 1 : 0)
            > 1) {
      problem(
          at + ".auth",
          "give one of jwt, mtls and principal_header; a source has one kind of caller");
    }
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
    MtlsSettings m = mtls;
    return orNull(
        () -> new WebhookSettings(w.path, mb, maxDepth, signature, jwt, m, principalHeader),
        at + ".path");
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
    if (d.window != null
        && (d.window.trim().equalsIgnoreCase("none")
            || d.window.trim().equalsIgnoreCase("forever"))) {
      b.noTtl();
    } else {
      Duration window =
          duration(d.window, at + ".window", DedupConfig.DEFAULT_TTL, DedupSettings.MAX_WINDOW);
      if (window != null) {
        if (window.toMillis() < 1) {
          problem(at + ".window", "must be at least 1ms, or forever for no window");
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
    String sequence = o.sequence == null ? null : o.sequence.trim();
    if (sequence != null) {
      try {
        dev.idem.key.FieldPath.parse(sequence);
      } catch (IdemConfigException e) {
        problem(at + ".sequence", e.getMessage());
      }
    }
    Duration gap =
        duration(
            o.gapTimeout,
            at + ".gap_timeout",
            OrderingSettings.DEFAULT_GAP_TIMEOUT,
            OrderingSettings.MAX_GAP_TIMEOUT);
    if (o.gapTimeout != null && sequence == null) {
      problem(
          at + ".gap_timeout", "applies only with ordering.sequence; set sequence or remove it");
    }
    int attempts = o.maxAttempts == null ? OrderingSettings.DEFAULT_MAX_ATTEMPTS : o.maxAttempts;
    if (attempts < 1 || attempts > OrderingSettings.MAX_MAX_ATTEMPTS) {
      problem(
          at + ".max_attempts",
          "must be from 1 to " + OrderingSettings.MAX_MAX_ATTEMPTS + ", got " + attempts);
    }
    OrderingFailure onFailure =
        enumValue(
            o.onFailure, OrderingFailure.values(), at + ".on_failure", OrderingFailure.DEAD_LETTER);
    if (problems.size() > before
        || key == null
        || mode == null
        || ttl == null
        || gap == null
        || onFailure == null) {
      return null;
    }
    return orNull(
        () -> new OrderingSettings(key, mode, ttl, sequence, gap, attempts, onFailure),
        at + ".lock_ttl");
  }

  private @Nullable DeliverSettings deliver(DeliverProperties d, String at) {
    int before = problems.size();
    DeliveryMode mode = enumValue(d.mode, DeliveryMode.values(), at + ".mode", DeliveryMode.SYNC);
    List<String> sinks = new ArrayList<>();
    for (String s : new String[] {"http", "file", "stdout", "jdbc", "nats", "rabbitmq", "kafka"}) {
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
      problem(
          at,
          "needs one sink: http, file, stdout, jdbc, nats, rabbitmq or kafka (e.g. stdout: {})");
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
          case "nats" ->
              d.nats == null ? missing(at + ".nats", "subject") : nats(d.nats, at + ".nats");
          case "rabbitmq" ->
              d.rabbitmq == null
                  ? missing(at + ".rabbitmq", "uri")
                  : rabbitmqSink(d.rabbitmq, at + ".rabbitmq");
          case "kafka" ->
              d.kafka == null ? missing(at + ".kafka", "topic") : kafkaSink(d.kafka, at + ".kafka");
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

  private @Nullable SinkSettings kafkaSink(IdemProperties.KafkaSinkProperties k, String at) {
    if (k.bootstrap == null) {
      return missing(at, "bootstrap");
    }
    if (k.topic == null) {
      return missing(at, "topic");
    }
    Duration timeout =
        duration(
            k.timeout,
            at + ".timeout",
            SinkSettings.Kafka.DEFAULT_TIMEOUT,
            SinkSettings.Kafka.MAX_TIMEOUT);
    if (timeout == null) {
      return null;
    }
    String field = k.key != null ? ".key" : k.properties != null ? ".properties" : ".topic";
    return orNull(
        () ->
            new SinkSettings.Kafka(
                k.bootstrap,
                k.topic,
                k.key,
                timeout,
                k.properties == null ? Map.of() : k.properties),
        at + field);
  }

  private @Nullable SinkSettings rabbitmqSink(IdemProperties.RabbitMqSinkProperties r, String at) {
    URI uri = amqpUri(r.uri, at + ".uri");
    Duration timeout =
        duration(
            r.timeout,
            at + ".timeout",
            SinkSettings.RabbitMq.DEFAULT_TIMEOUT,
            SinkSettings.Http.MAX_TIMEOUT);
    if (uri == null || timeout == null) {
      return null;
    }
    String exchange = r.exchange == null ? "" : r.exchange;
    String routingKey = r.routingKey == null ? "" : r.routingKey;
    return orNull(
        () -> new SinkSettings.RabbitMq(uri, exchange, routingKey, timeout),
        r.timeout != null && timeout.toMillis() < 1 ? at + ".timeout" : at + ".routing_key");
  }

  private @Nullable SinkSettings file(String path, String at) {
    Path p = toPath(path, at);
    return p == null ? null : new SinkSettings.File(p);
  }

  private @Nullable SinkSettings nats(IdemProperties.NatsSinkProperties n, String at) {
    if (n.subject == null) {
      return missing(at, "subject");
    }
    Duration timeout =
        duration(
            n.timeout,
            at + ".timeout",
            SinkSettings.Nats.DEFAULT_TIMEOUT,
            SinkSettings.Http.MAX_TIMEOUT);
    if (timeout == null) {
      return null;
    }
    String url = n.url == null ? NatsSourceSettings.DEFAULT_URL : n.url.trim();
    if (!natsField(() -> NatsSourceSettings.checkUrl(url), at + ".url")) {
      return null;
    }
    String field =
        n.stream != null && !n.stream.matches("[A-Za-z0-9_-]+")
            ? at + ".stream"
            : n.timeout != null && timeout.toMillis() < 1 ? at + ".timeout" : at + ".subject";
    SinkSettings[] made = new SinkSettings[1];
    boolean ok =
        natsField(() -> made[0] = new SinkSettings.Nats(url, n.subject, n.stream, timeout), field);
    return ok ? made[0] : null;
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

  /** A Redis URL with several hosts names cluster seeds; the outbox needs a hash tag there. */
  private static boolean redisClusterWithoutHashTag(StoreSettings s) {
    String url = s.url();
    String prefix = s.prefix() == null ? StoreSettings.DEFAULT_PREFIX : s.prefix();
    if (s.type() != StoreType.REDIS || url == null) {
      return false;
    }
    String hosts = url.replaceFirst("(?i)^rediss?://", "").replaceFirst("[/?#].*$", "");
    if (!hosts.contains(",") || url.toLowerCase(java.util.Locale.ROOT).contains("sentinel")) {
      return false;
    }
    int open = prefix.indexOf('{');
    return open < 0 || prefix.indexOf('}', open + 1) <= open + 1;
  }
}
