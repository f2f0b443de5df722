package dev.idem.server.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.admin.Explainer;
import dev.idem.server.deliver.BlockedKeys;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.metrics.DecisionSampler;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.metrics.RecentDecisions;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.pipeline.PoisonKeys;
import dev.idem.server.tenant.TenantKeys;
import dev.idem.server.tenant.TenantScopedStore;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API under {@code /admin}, behind a bearer token:
 *
 * <ul>
 *   <li>{@code GET /admin/stats}: counts per pipeline;
 *   <li>{@code GET /admin/pipelines/{id}/keys/{key}}: the key's state ({@code absent}, {@code
 *       in_flight}, {@code committed}) with ISO-8601 times;
 *   <li>{@code DELETE /admin/pipelines/{id}/keys/{key}}: forget the key (the next event with it is
 *       new);
 *   <li>{@code DELETE /admin/pipelines/{id}/keys}: forget every key of the pipeline; for a pipeline
 *       with {@code tenant}, {@code ?tenant=<tenant>} is required and only that tenant's keys go
 *       (the key endpoints take {@code ?tenant=} too, to read a raw key value in that tenant);
 *   <li>{@code GET /admin/pipelines/{id}/dead-letters?limit=N}: deliveries given up;
 *   <li>{@code GET /admin/pipelines/{id}/outbox?limit=N}: deliveries still waiting (async), oldest
 *       first, each with its attempts, when it may be tried next and its last error;
 *   <li>{@code GET /admin/pipelines/{id}/dead-letters?limit=N&since=T&until=T&after=C}: deliveries
 *       given up, newest first, in a time range (ISO-8601 or epoch milliseconds), a page at a time
 *       ({@code next} is the {@code after} of the next page);
 *   <li>{@code GET|DELETE /admin/pipelines/{id}/dead-letters/{n}}: one dead letter (event, key,
 *       attempts, last error, downstream status), or purge it; {@code DELETE
 *       /admin/pipelines/{id}/dead-letters}: purge all of the pipeline's;
 *   <li>{@code POST /admin/pipelines/{id}/dead-letters/{n}/requeue}: deliver it again through the
 *       outbox, with the same {@code Idempotency-Key}; the key stays committed (dedup is bypassed);
 *   <li>{@code GET /admin/pipelines/{id}/blocked-keys}: ordering keys with a failing (poison)
 *       event. Async delivery: the keys blocked in the outbox ({@code on_failure: block}), the same
 *       on every instance; {@code POST /admin/pipelines/{id}/blocked-keys/{key}/skip} makes the
 *       blocked entry a dead letter and the key moves on, {@code .../retry} delivers it again with
 *       its attempts reset. Sync delivery: the keys in backoff or blocked whose failures this
 *       instance saw (instance-local); skip commits the event's key and lets the key move on, retry
 *       starts its attempts again;
 *   <li>{@code POST /admin/pipelines/{id}/keys/{key}/redeliver}: requeue the dead letter of a
 *       committed key, where the pipeline still keeps its event;
 *   <li>{@code POST /admin/pipelines/{id}/explain} with {@code {"body": "...", "headers": {...},
 *       "principals": [{"issuer": "...", "subject": "..."}]}}: what the pipeline would do with that
 *       event and why, changing nothing ({@link Explainer});
 *   <li>{@code GET /admin/pipelines}: each pipeline's source, store, delivery mode, counts and
 *       outbox depth; {@code GET /admin/pipelines/{id}/decisions?limit=N}: its recent decisions;
 *       {@code GET /admin/pipelines/{id}/series}: its counters sampled over the last minutes, as
 *       rates per second (for the console's chart).
 * </ul>
 *
 * <p>Requeues, redeliveries and purges are logged at INFO like forgets.
 *
 * <p>Forgetting a key and clearing a pipeline are logged at INFO with who did it ({@code
 * token=sha256:<first 12 hex digits of the token's SHA-256>}, never the token) and how many keys
 * went.
 *
 * <p>{@code {key}} is the raw key value, URL-encoded; for a composite key, the JSON array of its
 * parts; or, with {@code ?form=digest}, the key's 64 hex digits (as {@code idem key} prints them,
 * and the only form for pipelines keyed by the body hash). The token is compared in constant time
 * (over SHA-256 digests, so not even its length leaks).
 */
public final class AdminApi implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final Logger LOG = LoggerFactory.getLogger(AdminApi.class);

  private final byte[] tokenDigest;
  private final String tokenId;
  private final Map<String, Pipeline> pipelines;
  private final IdemMetrics metrics;
  private final Function<byte[], Delivery> outboxDecoder;
  private final Function<Pipeline, Explainer> explainers;
  private final Map<String, Explainer> explainerCache =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final @Nullable DecisionSampler sampler;
  private final TimeSource time;

  /**
   * Creates the API without a sampler, explaining with no signature check or transform.
   *
   * @param token the bearer token
   * @param pipelines the pipelines by id, in config order
   * @param metrics the counters behind {@code /admin/stats}
   * @param outboxDecoder turns an outbox payload back into the delivery, for dead letters
   */
  public AdminApi(
      String token,
      Map<String, Pipeline> pipelines,
      IdemMetrics metrics,
      Function<byte[], Delivery> outboxDecoder) {
    this(
        token,
        pipelines,
        metrics,
        outboxDecoder,
        p -> new Explainer(p, null, null, TimeSource.system()),
        null,
        TimeSource.system());
  }

  /**
   * Creates the API.
   *
   * @param token the bearer token
   * @param pipelines the pipelines by id, in config order
   * @param metrics the counters behind {@code /admin/stats}
   * @param outboxDecoder turns an outbox payload back into the delivery, for dead letters
   * @param explainers makes a pipeline's explainer (called once per pipeline, when first needed)
   * @param sampler the counters' samples behind {@code /series}, or null for none; closed by {@link
   *     #close()}
   * @param time the clock of requeues
   */
  public AdminApi(
      String token,
      Map<String, Pipeline> pipelines,
      IdemMetrics metrics,
      Function<byte[], Delivery> outboxDecoder,
      Function<Pipeline, Explainer> explainers,
      @Nullable DecisionSampler sampler,
      TimeSource time) {
    this.tokenDigest = sha256(token);
    this.tokenId = "sha256:" + HexFormat.of().formatHex(tokenDigest, 0, 6);
    this.pipelines = pipelines;
    this.metrics = metrics;
    this.outboxDecoder = outboxDecoder;
    this.explainers = explainers;
    this.sampler = sampler;
    this.time = time;
  }

  /** Stops the sampler. */
  @Override
  public void close() {
    if (sampler != null) {
      sampler.close();
    }
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /**
   * Checks an {@code Authorization} header.
   *
   * @param authorization the header's value, or null
   * @return whether it carries the token
   */
  public boolean authorized(@Nullable String authorization) {
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    return MessageDigest.isEqual(tokenDigest, sha256(authorization.substring(7).trim()));
  }

  /**
   * Handles an authorized admin request.
   *
   * @param method the HTTP method
   * @param segments the decoded path segments after {@code /admin}
   * @param query the decoded query parameters
   * @return the answer
   */
  public Answer handle(String method, List<String> segments, Map<String, String> query) {
    return handle(method, segments, query, new byte[0]);
  }

  /**
   * Handles an authorized admin request with a body.
   *
   * @param method the HTTP method
   * @param segments the decoded path segments after {@code /admin}
   * @param query the decoded query parameters
   * @param body the request body (empty if none)
   * @return the answer
   */
  public Answer handle(
      String method, List<String> segments, Map<String, String> query, byte[] body) {
    try {
      if (segments.size() == 1 && segments.get(0).equals("stats")) {
        return method.equals("GET") ? stats() : notAllowed("GET");
      }
      if (segments.size() == 1 && segments.get(0).equals("pipelines")) {
        return method.equals("GET") ? pipelineList() : notAllowed("GET");
      }
      if (segments.size() >= 3 && segments.get(0).equals("pipelines")) {
        Pipeline p = pipelines.get(segments.get(1));
        if (p == null) {
          return Answer.error(
              404,
              "unknown_pipeline",
              "no pipeline '"
                  + segments.get(1)
                  + "'; known: "
                  + String.join(", ", pipelines.keySet()));
        }
        String what = segments.get(2);
        Answer badTenant = checkTenant(p, what, segments.size(), query.get("tenant"));
        if (badTenant != null) {
          return badTenant;
        }
        if (what.equals("keys") && segments.size() == 3) {
          return method.equals("DELETE") ? clear(p, query.get("tenant")) : notAllowed("DELETE");
        }
        if (what.equals("keys") && segments.size() == 4) {
          EventKeys keys = keysOf(p, query.get("tenant"));
          return switch (method) {
            case "GET" -> inspect(p, keys, segments.get(3), "digest".equals(query.get("form")));
            case "DELETE" -> forget(p, keys, segments.get(3), "digest".equals(query.get("form")));
            default -> notAllowed("GET, DELETE");
          };
        }
        if (what.equals("keys") && segments.size() == 5 && segments.get(4).equals("redeliver")) {
          return method.equals("POST")
              ? redeliver(
                  p,
                  keysOf(p, query.get("tenant")),
                  segments.get(3),
                  "digest".equals(query.get("form")))
              : notAllowed("POST");
        }
        if (what.equals("dead-letters") && segments.size() == 3) {
          return switch (method) {
            case "GET" -> deadLetters(p, query);
            case "DELETE" -> purgeAll(p);
            default -> notAllowed("GET, DELETE");
          };
        }
        if (what.equals("dead-letters") && segments.size() >= 4) {
          long id;
          try {
            id = Long.parseLong(segments.get(3));
          } catch (NumberFormatException e) {
            return Answer.error(
                400,
                "bad_id",
                "'"
                    + segments.get(3)
                    + "' is not a dead letter id; the listing gives each one's id");
          }
          if (segments.size() == 4) {
            return switch (method) {
              case "GET" -> deadLetter(p, id);
              case "DELETE" -> purge(p, id);
              default -> notAllowed("GET, DELETE");
            };
          }
          if (segments.size() == 5 && segments.get(4).equals("requeue")) {
            return method.equals("POST") ? requeue(p, id) : notAllowed("POST");
          }
        }
        if (what.equals("blocked-keys") && segments.size() == 3) {
          return method.equals("GET") ? blockedKeys(p) : notAllowed("GET");
        }
        if (what.equals("blocked-keys")
            && segments.size() == 5
            && (segments.get(4).equals("skip") || segments.get(4).equals("retry"))) {
          return method.equals("POST")
              ? unblock(p, segments.get(3), segments.get(4).equals("skip"))
              : notAllowed("POST");
        }
        if (what.equals("explain") && segments.size() == 3) {
          return method.equals("POST") ? explain(p, body) : notAllowed("POST");
        }
        if (what.equals("decisions") && segments.size() == 3) {
          return method.equals("GET") ? decisions(p, query.get("limit")) : notAllowed("GET");
        }
        if (what.equals("series") && segments.size() == 3) {
          return method.equals("GET") ? series(p) : notAllowed("GET");
        }
        if (what.equals("outbox") && segments.size() == 3) {
          return method.equals("GET") ? pending(p, query.get("limit")) : notAllowed("GET");
        }
      }
      return Answer.error(
          404,
          "not_found",
          "no such admin endpoint; see docs/service.md (GET /admin/stats, GET /admin/pipelines,"
              + " GET|DELETE /admin/pipelines/{id}/keys/{key}, POST"
              + " /admin/pipelines/{id}/keys/{key}/redeliver, DELETE /admin/pipelines/{id}/keys,"
              + " GET|DELETE /admin/pipelines/{id}/dead-letters[/{n}], POST"
              + " /admin/pipelines/{id}/dead-letters/{n}/requeue, GET"
              + " /admin/pipelines/{id}/outbox, POST /admin/pipelines/{id}/explain, GET"
              + " /admin/pipelines/{id}/decisions, GET /admin/pipelines/{id}/series, GET"
              + " /admin/pipelines/{id}/blocked-keys, POST"
              + " /admin/pipelines/{id}/blocked-keys/{key}/skip|retry)");
    } catch (StoreUnavailableException e) {
      return Answer.error(
          503,
          "store_unavailable",
          "the store did not answer (" + e.getMessage() + "); retry later",
          Map.of("Retry-After", "5"));
    }
  }

  private static Answer notAllowed(String allow) {
    return Answer.error(405, "method_not_allowed", "use " + allow, Map.of("Allow", allow));
  }

  private Answer stats() {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode ps = root.putObject("pipelines");
    for (Pipeline p : pipelines.values()) {
      ObjectNode n = ps.putObject(p.id());
      metrics.pipeline(p.id()).counts().forEach(n::put);
      OutboxStore box = p.outbox();
      if (box != null
          && p.settings().deliver().mode() == dev.idem.server.config.DeliveryMode.ASYNC) {
        n.put("outbox_depth", box.depth(p.id()));
      }
    }
    return json(200, root);
  }

  /**
   * A tenanted pipeline's clear needs {@code ?tenant=}; a pipeline without tenants takes none. Null
   * when the request is fine.
   */
  private static @Nullable Answer checkTenant(
      Pipeline p, String what, int segments, @Nullable String tenant) {
    boolean tenanted = p.keys() instanceof TenantKeys;
    if (tenant != null && !tenanted) {
      return Answer.error(
          400, "no_tenants", "pipeline '" + p.id() + "' has no tenant setting; remove ?tenant=");
    }
    if (tenant != null && tenant.isBlank()) {
      return Answer.error(400, "bad_tenant", "?tenant= is blank; give the tenant's name");
    }
    if (tenanted && tenant == null && what.equals("keys") && segments == 3) {
      return Answer.error(
          400,
          "tenant_required",
          "pipeline '"
              + p.id()
              + "' keeps its keys per tenant; clear one tenant: DELETE"
              + " /admin/pipelines/"
              + p.id()
              + "/keys?tenant=<tenant>");
    }
    return null;
  }

  /** The pipeline's keys, those of one tenant with {@code ?tenant=}. */
  private static EventKeys keysOf(Pipeline p, @Nullable String tenant) {
    return tenant != null && p.keys() instanceof TenantKeys t ? t.forTenant(tenant) : p.keys();
  }

  private @Nullable Deduplicator dedupOf(Pipeline p) {
    return p.dedup();
  }

  private Answer noDedup(Pipeline p) {
    return Answer.error(
        409, "no_dedup", "pipeline '" + p.id() + "' has no dedup step, so it keeps no keys");
  }

  /**
   * Turns the {@code {key}} of an admin URL (or the CLI's KEY) into the pipeline's key.
   *
   * @param keys the pipeline's key rule
   * @param raw the raw key value, or with {@code digest} its 64 hex digits
   * @param digest whether {@code raw} is the digest
   * @return the key
   * @throws KeyDerivationException if the value does not fit the pipeline's key rule
   */
  public static DedupKey keyOf(EventKeys keys, String raw, boolean digest) {
    if (digest) {
      try {
        return DedupKey.parseHex(raw);
      } catch (IllegalArgumentException e) {
        throw new KeyDerivationException(
            "'" + raw + "' is not a key digest; give the 64 hex digits that `idem key` prints");
      }
    }
    return keys.fromRaw(raw);
  }

  /**
   * Describes a key's state as the admin API and the CLI print it.
   *
   * @param pipeline the pipeline id
   * @param raw the key as given
   * @param key the key
   * @param state its state
   * @return a JSON object: pipeline, key, digest, state and its times in ISO-8601
   */
  public static ObjectNode describe(String pipeline, String raw, DedupKey key, KeyState state) {
    ObjectNode n = JSON.createObjectNode();
    n.put("pipeline", pipeline);
    n.put("key", raw);
    n.put("digest", key.toHex());
    if (state instanceof KeyState.InFlight f) {
      n.put("state", "in_flight");
      n.put("reserved_at", iso(f.reservedAtMillis()));
      n.put("lease_until", iso(f.leaseUntilMillis()));
    } else if (state instanceof KeyState.Committed c) {
      n.put("state", "committed");
      n.put("committed_at", iso(c.committedAtMillis()));
      if (c.expiresAtMillis() == Long.MAX_VALUE) {
        n.putNull("expires_at");
      } else {
        n.put("expires_at", iso(c.expiresAtMillis()));
      }
      n.put("has_result", c.result() != null);
    } else {
      n.put("state", "absent");
    }
    return n;
  }

  private Answer inspect(Pipeline p, EventKeys keys, String raw, boolean digest) {
    return withKey(
        p, keys, raw, digest, (d, key) -> json(200, describe(p.id(), raw, key, d.inspect(key))));
  }

  private Answer forget(Pipeline p, EventKeys keys, String raw, boolean digest) {
    return withKey(
        p,
        keys,
        raw,
        digest,
        (d, key) -> {
          boolean existed = d.forget(key);
          LOG.info(
              "admin forget pipeline={} key={} forgotten={} by token={}",
              p.id(),
              key.toHex(),
              existed,
              tokenId);
          ObjectNode n = JSON.createObjectNode();
          n.put("pipeline", p.id());
          n.put("key", raw);
          n.put("digest", key.toHex());
          n.put("forgotten", existed);
          return json(200, n);
        });
  }

  /**
   * Resolves the pipeline's dedup step and the key named in the path, then answers with {@code
   * action}; a pipeline without dedup or a key that cannot be read is answered without it.
   */
  private Answer withKey(
      Pipeline p,
      EventKeys keys,
      String raw,
      boolean digest,
      BiFunction<Deduplicator, DedupKey, Answer> action) {
    Deduplicator d = dedupOf(p);
    if (d == null) {
      return noDedup(p);
    }
    DedupKey key;
    try {
      key = keyOf(keys, raw, digest);
    } catch (KeyDerivationException e) {
      return Answer.error(400, "bad_key", e.getMessage());
    }
    return action.apply(d, key);
  }

  private Answer clear(Pipeline p, @Nullable String tenant) {
    Deduplicator d = dedupOf(p);
    if (d == null) {
      return noDedup(p);
    }
    long removed =
        tenant != null && d.store() instanceof TenantScopedStore t
            ? t.clearTenant(tenant)
            : d.clear();
    LOG.info(
        "admin clear pipeline={}{} removed={} keys by token={}",
        p.id(),
        tenant == null ? "" : " tenant=" + tenant,
        removed,
        tokenId);
    ObjectNode n = JSON.createObjectNode();
    n.put("pipeline", p.id());
    if (tenant != null) {
      n.put("tenant", tenant);
    }
    n.put("removed", removed);
    return json(200, n);
  }

  private static @Nullable OutboxStore asyncOutbox(Pipeline p) {
    OutboxStore box = p.outbox();
    return box == null || p.settings().deliver().mode() != dev.idem.server.config.DeliveryMode.ASYNC
        ? null
        : box;
  }

  private static Answer noOutbox(Pipeline p, String what) {
    return Answer.error(
        409,
        "no_outbox",
        "pipeline '"
            + p.id()
            + "' delivers synchronously, so it has no "
            + what
            + " (a failed sync delivery is answered 502 and logged)");
  }

  /** Parses {@code ?limit=}: 100 when absent, else 1 to 10000; -1 when malformed. */
  private static int limitOf(@Nullable String limitText) {
    if (limitText == null) {
      return 100;
    }
    int limit;
    try {
      limit = Integer.parseInt(limitText);
    } catch (NumberFormatException e) {
      return -1;
    }
    return limit < 1 || limit > 10_000 ? -1 : limit;
  }

  private static Answer badLimit() {
    return Answer.error(400, "bad_limit", "limit must be a whole number from 1 to 10000");
  }

  private Answer pending(Pipeline p, @Nullable String limitText) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "outbox");
    }
    int limit = limitOf(limitText);
    if (limit < 0) {
      return badLimit();
    }
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    root.put("depth", box.depth(p.id()));
    ArrayNode list = root.putArray("pending");
    for (PendingEntry e : box.pending(p.id(), limit)) {
      ObjectNode n = list.addObject();
      n.put("id", e.id());
      n.put("digest", e.key().toHex());
      try {
        n.put("idempotency_key", outboxDecoder.apply(e.payload()).idempotencyKey());
      } catch (RuntimeException undecodable) {
        n.putNull("idempotency_key");
      }
      n.put("attempts", e.attempts());
      n.put("enqueued_at", iso(e.enqueuedAtMillis()));
      boolean blocked = BlockedKeys.isBlocked(e.lastError());
      n.put("blocked", blocked);
      if (blocked) {
        n.putNull("next_attempt_at"); // until an operator skips or retries it
      } else {
        n.put("next_attempt_at", iso(e.availableAtMillis()));
      }
      String error = BlockedKeys.displayError(e.lastError());
      if (error == null) {
        n.putNull("last_error");
      } else {
        n.put("last_error", error);
      }
    }
    return json(200, root);
  }

  private static final Pattern DOWNSTREAM_STATUS = Pattern.compile("\\bHTTP (\\d{3})\\b");

  /** Parses a time parameter: ISO-8601 or epoch milliseconds; null when absent. */
  private static @Nullable Long timeOf(@Nullable String text) {
    if (text == null || text.isEmpty()) {
      return null;
    }
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      return Instant.parse(text).toEpochMilli();
    }
  }

  private static Answer badTime(String name, String value) {
    return Answer.error(
        400,
        "bad_time",
        name
            + "='"
            + value
            + "' is not a time; give ISO-8601 (2026-12-01T12:00:00Z) or epoch milliseconds");
  }

  private Answer deadLetters(Pipeline p, Map<String, String> query) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    int limit = limitOf(query.get("limit"));
    if (limit < 0) {
      return badLimit();
    }
    DeadLetterQuery q = DeadLetterQuery.newest(limit);
    for (String name : List.of("since", "until")) {
      Long at;
      try {
        at = timeOf(query.get(name));
      } catch (DateTimeParseException e) {
        return badTime(name, query.get(name));
      }
      if (at != null) {
        q = name.equals("since") ? q.since(at) : q.until(at);
      }
    }
    String after = query.get("after");
    if (after != null && !after.isEmpty()) {
      int dot = after.indexOf('.');
      try {
        q =
            q.after(
                Long.parseLong(after.substring(0, dot)), Long.parseLong(after.substring(dot + 1)));
      } catch (RuntimeException e) {
        return Answer.error(
            400, "bad_cursor", "after='" + after + "' is not the 'next' of an earlier page");
      }
    }
    List<DeadLetter> page = box.deadLetters(p.id(), q);
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    ArrayNode list = root.putArray("dead_letters");
    for (DeadLetter dl : page) {
      list.add(deadLetterJson(dl));
    }
    if (page.size() == limit) {
      DeadLetter last = page.get(page.size() - 1);
      root.put("next", last.deadAtMillis() + "." + last.id());
    } else {
      root.putNull("next");
    }
    return json(200, root);
  }

  private ObjectNode deadLetterJson(DeadLetter dl) {
    ObjectNode n = JSON.createObjectNode();
    n.put("id", dl.id());
    n.put("digest", dl.key().toHex());
    n.put("attempts", dl.attempts());
    n.put("enqueued_at", iso(dl.enqueuedAtMillis()));
    n.put("dead_at", iso(dl.deadAtMillis()));
    n.put("reason", dl.reason());
    Matcher m = DOWNSTREAM_STATUS.matcher(dl.reason());
    if (m.find()) {
      n.put("downstream_status", Integer.parseInt(m.group(1)));
    } else {
      n.putNull("downstream_status");
    }
    try {
      Delivery delivery = outboxDecoder.apply(dl.payload());
      n.put("idempotency_key", delivery.idempotencyKey());
      try {
        n.set("body", JSON.readTree(delivery.body()));
      } catch (java.io.IOException e) {
        n.put("body_base64", Base64.getEncoder().encodeToString(delivery.body()));
      }
    } catch (RuntimeException e) {
      n.put("payload_base64", Base64.getEncoder().encodeToString(dl.payload()));
    }
    return n;
  }

  private static Answer noDeadLetter(Pipeline p, long id) {
    return Answer.error(
        404,
        "no_dead_letter",
        "pipeline '"
            + p.id()
            + "' has no dead letter "
            + id
            + " (requeued or purged already?); list them with GET /admin/pipelines/"
            + p.id()
            + "/dead-letters");
  }

  private Answer deadLetter(Pipeline p, long id) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    Optional<DeadLetter> dl = box.findDeadLetter(p.id(), id);
    if (dl.isEmpty()) {
      return noDeadLetter(p, id);
    }
    ObjectNode n = deadLetterJson(dl.get());
    n.put("pipeline", p.id());
    return json(200, n);
  }

  private static Answer noPoisonKeys(Pipeline p) {
    return Answer.error(
        409,
        "no_poison_keys",
        "pipeline '"
            + p.id()
            + "' has no ordering key with a dedup step, so it blocks no keys (poison keys need"
            + " ordering: { key: ... } and dedup)");
  }

  /** Whether a pipeline's blocked keys are kept by its outbox (async) rather than PoisonKeys. */
  private static boolean asyncPoison(Pipeline p) {
    return asyncOutbox(p) != null && p.settings().ordering() != null;
  }

  private static ObjectNode poisonJson(PoisonKeys.State s) {
    ObjectNode n = JSON.createObjectNode();
    n.put("ordering_key", s.orderingKey());
    n.put("event_digest", s.eventKey());
    n.putNull("outbox_id");
    n.put("attempts", s.attempts());
    n.put("blocked", s.blocked());
    if (s.sinceMillis() > 0) {
      n.put("since", iso(s.sinceMillis()));
    } else {
      n.putNull("since");
    }
    if (s.lastError().isEmpty()) {
      n.putNull("last_error");
    } else {
      n.put("last_error", s.lastError());
    }
    n.put("next_attempt_at", iso(s.nextAttemptMillis()));
    return n;
  }

  private ObjectNode blockedJson(BlockedKeys.Blocked b) {
    ObjectNode n = JSON.createObjectNode();
    n.put("ordering_key", b.orderingKey());
    n.put("event_digest", b.key().toHex());
    n.put("outbox_id", b.id());
    n.put("attempts", b.attempts());
    n.put("blocked", true);
    n.put("since", iso(b.sinceMillis()));
    n.put("last_error", b.lastError());
    n.putNull("next_attempt_at");
    return n;
  }

  private Answer blockedKeys(Pipeline p) {
    if (asyncPoison(p)) {
      OutboxStore box = Objects.requireNonNull(asyncOutbox(p));
      ObjectNode root = JSON.createObjectNode();
      root.put("pipeline", p.id());
      root.put("delivery", "async");
      root.put("instance_local", false);
      root.put("on_failure", p.settings().ordering().onFailure().configName());
      ArrayNode list = root.putArray("blocked_keys");
      for (BlockedKeys.Blocked b : BlockedKeys.list(box, p.id(), outboxDecoder)) {
        list.add(blockedJson(b));
      }
      root.put(
          "note",
          "kept in the store's outbox: the same list on every instance, across restarts (among the"
              + " first "
              + BlockedKeys.SCAN_LIMIT
              + " waiting entries); entries waiting for a retry are in GET /admin/pipelines/"
              + p.id()
              + "/outbox");
      return json(200, root);
    }
    PoisonKeys poison = p.poisonKeys();
    if (poison == null) {
      return noPoisonKeys(p);
    }
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    root.put("delivery", "sync");
    root.put("instance_local", true);
    root.put("on_failure", p.settings().ordering().onFailure().configName());
    ArrayNode list = root.putArray("blocked_keys");
    for (PoisonKeys.State s : poison.list()) {
      list.add(poisonJson(s));
    }
    root.put(
        "note",
        "instance-local: the ordering keys whose failures this instance saw (sync delivery);"
            + " other instances list their own; skip and retry work on any instance");
    return json(200, root);
  }

  private static Answer badOrderingKey(Pipeline p, String orderingKey) {
    return Answer.error(
        400,
        "bad_key",
        "'"
            + orderingKey
            + "' is not an ordering key digest; GET /admin/pipelines/"
            + p.id()
            + "/blocked-keys gives each one's ordering_key (64 hex digits, also in the log)");
  }

  private static Answer notBlocked(Pipeline p, String orderingKey) {
    return Answer.error(
        404,
        "not_blocked",
        "ordering key " + orderingKey + " of pipeline '" + p.id() + "' has no failing event");
  }

  private Answer unblock(Pipeline p, String orderingKey, boolean skip) {
    if (asyncPoison(p)) {
      return unblockAsync(p, Objects.requireNonNull(asyncOutbox(p)), orderingKey, skip);
    }
    PoisonKeys poison = p.poisonKeys();
    Deduplicator dedup = p.dedup();
    if (poison == null || dedup == null) {
      return noPoisonKeys(p);
    }
    if (!orderingKey.matches("[0-9a-f]{64}")) {
      return badOrderingKey(p, orderingKey);
    }
    PoisonKeys.State s = skip ? poison.skip(orderingKey, dedup) : poison.retry(orderingKey);
    if (s == null) {
      return notBlocked(p, orderingKey);
    }
    LOG.info(
        "admin {} pipeline={} ordering_key={} key={} attempts={} by token={}",
        skip ? "skip" : "retry",
        p.id(),
        orderingKey,
        s.eventKey(),
        s.attempts(),
        tokenId);
    ObjectNode n = poisonJson(s);
    n.put("pipeline", p.id());
    n.put(skip ? "skipped" : "retried", true);
    n.put(
        "note",
        skip
            ? "the failing event's key is committed (its resends are duplicates, it is not"
                + " delivered) and the ordering key's later events proceed"
            : "the failing event's attempts start again: its sender's next resend is processed;"
                + " later events of the key still wait behind it");
    return json(200, n);
  }

  private Answer unblockAsync(Pipeline p, OutboxStore box, String orderingKey, boolean skip) {
    if (orderingKey.isEmpty() || orderingKey.length() > 255) {
      return badOrderingKey(p, orderingKey);
    }
    Optional<BlockedKeys.Blocked> found = BlockedKeys.find(box, p.id(), orderingKey, outboxDecoder);
    if (found.isEmpty()) {
      return Answer.error(
          404,
          "not_blocked",
          "ordering key "
              + orderingKey
              + " of pipeline '"
              + p.id()
              + "' is not blocked (an entry waiting for a retry is not blocked yet: see GET"
              + " /admin/pipelines/"
              + p.id()
              + "/outbox)");
    }
    BlockedKeys.Blocked b = found.get();
    long now = time.wallMillis();
    if (skip) {
      BlockedKeys.skip(box, p.id(), b, now);
    } else {
      BlockedKeys.retry(box, p.id(), b, now);
    }
    LOG.info(
        "admin {} pipeline={} ordering_key={} key={} outbox_id={} attempts={} by token={}",
        skip ? "skip" : "retry",
        p.id(),
        orderingKey,
        b.key().toHex(),
        b.id(),
        b.attempts(),
        tokenId);
    ObjectNode n = blockedJson(b);
    n.put("pipeline", p.id());
    n.put(skip ? "skipped" : "retried", true);
    n.put(
        "note",
        skip
            ? "the blocked event is now dead letter "
                + b.id()
                + " (requeue it with POST /admin/pipelines/"
                + p.id()
                + "/dead-letters/"
                + b.id()
                + "/requeue); the ordering key's next event is delivered"
            : "the blocked event is delivered again now, with all its attempts"
                + " (deliver.retries); the key's later events still wait behind it");
    return json(200, n);
  }

  private Answer requeue(Pipeline p, long id) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    Optional<DeadLetter> dl = box.findDeadLetter(p.id(), id);
    OptionalLong newId = box.requeueDeadLetter(p.id(), id, time.wallMillis());
    if (newId.isEmpty()) {
      return noDeadLetter(p, id);
    }
    String digest = dl.map(d -> d.key().toHex()).orElse("?");
    LOG.info(
        "admin requeue pipeline={} dead_letter={} key={} outbox_id={} by token={}",
        p.id(),
        id,
        digest,
        newId.getAsLong(),
        tokenId);
    ObjectNode n = JSON.createObjectNode();
    n.put("pipeline", p.id());
    n.put("dead_letter", id);
    n.put("digest", digest);
    n.put("requeued", true);
    n.put("outbox_id", newId.getAsLong());
    n.put(
        "note",
        "delivered again from the outbox with the same Idempotency-Key; the key stays committed,"
            + " so senders' retries are still duplicates");
    return json(200, n);
  }

  private Answer purge(Pipeline p, long id) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    boolean purged = box.purgeDeadLetter(p.id(), id);
    if (!purged) {
      return noDeadLetter(p, id);
    }
    LOG.info("admin purge pipeline={} dead_letter={} by token={}", p.id(), id, tokenId);
    ObjectNode n = JSON.createObjectNode();
    n.put("pipeline", p.id());
    n.put("dead_letter", id);
    n.put("purged", true);
    return json(200, n);
  }

  private Answer purgeAll(Pipeline p) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    long purged = box.purgeDeadLetters(p.id());
    LOG.info("admin purge pipeline={} dead_letters={} (all) by token={}", p.id(), purged, tokenId);
    ObjectNode n = JSON.createObjectNode();
    n.put("pipeline", p.id());
    n.put("purged", purged);
    return json(200, n);
  }

  /**
   * Delivers a committed key's event again, where the pipeline still keeps it: its dead letter. A
   * delivered event is not kept (the outbox forgets it once acknowledged, and replay mode stores
   * only the downstream's answer), so then the answer says what to do instead.
   */
  private Answer redeliver(Pipeline p, EventKeys keys, String raw, boolean digest) {
    return withKey(
        p,
        keys,
        raw,
        digest,
        (d, key) -> {
          KeyState state = d.inspect(key);
          if (!(state instanceof KeyState.Committed)) {
            return Answer.error(
                409,
                "not_committed",
                "the key is "
                    + (state instanceof KeyState.InFlight ? "in flight" : "absent")
                    + ", so there is nothing to redeliver; an absent key's next event is simply"
                    + " new");
          }
          OutboxStore box = asyncOutbox(p);
          if (box != null) {
            DeadLetterQuery q = DeadLetterQuery.newest(1_000);
            while (true) {
              List<DeadLetter> page = box.deadLetters(p.id(), q);
              for (DeadLetter dl : page) {
                if (dl.key().equals(key)) {
                  return requeue(p, dl.id());
                }
              }
              if (page.size() < 1_000) {
                break;
              }
              q = q.after(page.get(page.size() - 1));
            }
            for (PendingEntry e : box.pending(p.id(), 10_000)) {
              if (e.key().equals(key)) {
                return Answer.error(
                    409,
                    "already_pending",
                    "the key's event is still in the outbox (entry "
                        + e.id()
                        + ", "
                        + e.attempts()
                        + " attempts); it is delivered from there, see GET /admin/pipelines/"
                        + p.id()
                        + "/outbox");
              }
            }
          }
          return Answer.error(
              404,
              "event_not_kept",
              "pipeline '"
                  + p.id()
                  + "' keeps no copy of this key's event: "
                  + (box == null
                      ? "it delivers synchronously"
                      : "it was delivered and left the outbox")
                  + (p.settings().dedup() != null
                          && p.settings().dedup().mode() == dev.idem.server.config.DedupMode.REPLAY
                      ? ", and replay mode stores only the downstream's answer"
                      : "")
                  + ". To deliver it again, forget the key (DELETE /admin/pipelines/"
                  + p.id()
                  + "/keys/"
                  + key.toHex()
                  + "?form=digest) and have the sender resend it");
        });
  }

  private Answer explain(Pipeline p, byte[] body) {
    JsonNode req;
    try {
      req = JSON.readTree(body);
    } catch (java.io.IOException e) {
      req = null;
    }
    if (req == null || !req.isObject()) {
      return badExplain("the request body is not a JSON object");
    }
    byte[] eventBody;
    JsonNode b = req.get("body");
    JsonNode b64 = req.get("body_base64");
    if (b != null && b.isTextual()) {
      eventBody = b.asText().getBytes(StandardCharsets.UTF_8);
    } else if (b64 != null && b64.isTextual()) {
      try {
        eventBody = Base64.getDecoder().decode(b64.asText());
      } catch (IllegalArgumentException e) {
        return badExplain("body_base64 is not base64");
      }
    } else {
      return badExplain("give the event's raw body as a string in \"body\" (or \"body_base64\")");
    }
    Map<String, String> headers = new java.util.LinkedHashMap<>();
    JsonNode h = req.get("headers");
    if (h != null && !h.isNull()) {
      if (!h.isObject()) {
        return badExplain("\"headers\" must be an object of header names to values");
      }
      for (Map.Entry<String, JsonNode> e : h.properties()) {
        headers.put(e.getKey(), e.getValue().asText());
      }
    }
    List<Principal> principals = new ArrayList<>();
    JsonNode ps = req.get("principals");
    if (ps != null && !ps.isNull()) {
      if (!ps.isArray()) {
        return badExplain("\"principals\" must be an array of {\"issuer\", \"subject\"}");
      }
      for (JsonNode pn : ps) {
        if (!pn.path("issuer").isTextual() || !pn.path("subject").isTextual()) {
          return badExplain("each principal needs a string \"issuer\" and \"subject\"");
        }
        try {
          principals.add(new Principal(pn.get("issuer").asText(), pn.get("subject").asText()));
        } catch (RuntimeException e) {
          return badExplain("a principal is not valid: " + e.getMessage());
        }
      }
    }
    Explainer explainer = explainerCache.computeIfAbsent(p.id(), id -> explainers.apply(p));
    return json(200, explainer.explain(new Explainer.Event(eventBody, headers, principals)));
  }

  private static Answer badExplain(String what) {
    return Answer.error(
        400,
        "bad_explain_request",
        what
            + "; send {\"body\": \"<the raw event>\", \"headers\": {\"Name\": \"value\"},"
            + " \"principals\": [{\"issuer\": \"...\", \"subject\": \"...\"}]}");
  }

  private Answer decisions(Pipeline p, @Nullable String limitText) {
    int limit = limitOf(limitText);
    if (limit < 0) {
      return badLimit();
    }
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    ArrayNode list = root.putArray("decisions");
    for (RecentDecisions.Entry e : metrics.pipeline(p.id()).recent().newest(limit)) {
      list.addObject()
          .put("at", iso(e.atMillis()))
          .put("digest", e.digest())
          .put("decision", e.decision());
    }
    return json(200, root);
  }

  private static final List<String> CHARTED = List.of("pass", "duplicate", "in_flight", "conflict");

  private Answer series(Pipeline p) {
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    if (sampler == null) {
      root.putNull("interval_seconds");
      root.putArray("points");
      return json(200, root);
    }
    root.put("interval_seconds", sampler.interval().toMillis() / 1000.0);
    ArrayNode points = root.putArray("points");
    List<DecisionSampler.Sample> samples = sampler.samples(p.id());
    for (int i = 1; i < samples.size(); i++) {
      DecisionSampler.Sample a = samples.get(i - 1);
      DecisionSampler.Sample b = samples.get(i);
      double seconds = Math.max(0.001, (b.atMillis() - a.atMillis()) / 1000.0);
      ObjectNode point = points.addObject();
      point.put("at", iso(b.atMillis()));
      for (String name : CHARTED) {
        long delta = b.counts().getOrDefault(name, 0L) - a.counts().getOrDefault(name, 0L);
        point.put(name, Math.round(delta / seconds * 100) / 100.0);
      }
    }
    return json(200, root);
  }

  private Answer pipelineList() {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode list = root.putArray("pipelines");
    for (Pipeline p : pipelines.values()) {
      ObjectNode n = list.addObject();
      n.put("id", p.id());
      n.put(
          "source",
          p.settings().webhook() == null
              ? p.settings().source().type()
              : "webhook " + p.settings().webhook().path());
      Deduplicator d = p.dedup();
      if (d == null) {
        n.putNull("store");
        n.putNull("key");
      } else {
        n.put("store", d.store().describe());
        n.put("key", p.keys().describe());
        n.put(
            "mode",
            p.settings().dedup() == null
                ? "drop"
                : p.settings().dedup().mode().name().toLowerCase(java.util.Locale.ROOT));
      }
      n.put("delivery", p.settings().deliver().mode().name().toLowerCase(java.util.Locale.ROOT));
      ObjectNode counts = n.putObject("counts");
      metrics.pipeline(p.id()).counts().forEach(counts::put);
      OutboxStore box = asyncOutbox(p);
      if (box != null) {
        n.put("outbox_depth", box.depth(p.id()));
        n.put("dead_letters", box.deadLetters(p.id(), DeadLetterQuery.newest(1_000)).size());
      } else {
        n.putNull("outbox_depth");
        n.putNull("dead_letters");
      }
      long evicted = counts.path("evicted_before_ttl").asLong();
      if (evicted > 0) {
        n.put(
            "warning",
            evicted
                + " committed keys were evicted (dedup.max_keys) before their window ran out: a"
                + " late duplicate of them passes as new; raise max_keys or use a durable store");
      } else {
        n.putNull("warning");
      }
    }
    return json(200, root);
  }

  private static String iso(long millis) {
    return Instant.ofEpochMilli(millis).toString();
  }

  private static Answer json(int status, ObjectNode n) {
    try {
      return new Answer(status, Answer.JSON, Map.of(), JSON.writeValueAsBytes(n));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write admin JSON", e);
    }
  }
}
