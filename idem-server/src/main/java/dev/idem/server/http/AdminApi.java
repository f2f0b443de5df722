package dev.idem.server.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.StoreUnavailableException;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.tenant.TenantKeys;
import dev.idem.server.tenant.TenantScopedStore;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
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
 *       first, each with its attempts, when it may be tried next and its last error.
 * </ul>
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
public final class AdminApi {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final Logger LOG = LoggerFactory.getLogger(AdminApi.class);

  private final byte[] tokenDigest;
  private final String tokenId;
  private final Map<String, Pipeline> pipelines;
  private final IdemMetrics metrics;
  private final Function<byte[], Delivery> outboxDecoder;

  /**
   * Creates the API.
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
    this.tokenDigest = sha256(token);
    this.tokenId = "sha256:" + HexFormat.of().formatHex(tokenDigest, 0, 6);
    this.pipelines = pipelines;
    this.metrics = metrics;
    this.outboxDecoder = outboxDecoder;
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
    try {
      if (segments.size() == 1 && segments.get(0).equals("stats")) {
        return method.equals("GET") ? stats() : notAllowed("GET");
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
        if (what.equals("dead-letters") && segments.size() == 3) {
          return method.equals("GET") ? deadLetters(p, query.get("limit")) : notAllowed("GET");
        }
        if (what.equals("outbox") && segments.size() == 3) {
          return method.equals("GET") ? pending(p, query.get("limit")) : notAllowed("GET");
        }
      }
      return Answer.error(
          404,
          "not_found",
          "no such admin endpoint; see docs/service.md (GET /admin/stats, GET|DELETE"
              + " /admin/pipelines/{id}/keys/{key}, DELETE /admin/pipelines/{id}/keys, GET"
              + " /admin/pipelines/{id}/dead-letters, GET /admin/pipelines/{id}/outbox)");
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
      n.put("next_attempt_at", iso(e.availableAtMillis()));
      if (e.lastError() == null) {
        n.putNull("last_error");
      } else {
        n.put("last_error", e.lastError());
      }
    }
    return json(200, root);
  }

  private Answer deadLetters(Pipeline p, @Nullable String limitText) {
    OutboxStore box = asyncOutbox(p);
    if (box == null) {
      return noOutbox(p, "dead letters");
    }
    int limit = limitOf(limitText);
    if (limit < 0) {
      return badLimit();
    }
    ObjectNode root = JSON.createObjectNode();
    root.put("pipeline", p.id());
    ArrayNode list = root.putArray("dead_letters");
    for (DeadLetter dl : box.deadLetters(p.id(), limit)) {
      ObjectNode n = list.addObject();
      n.put("id", dl.id());
      n.put("digest", dl.key().toHex());
      n.put("attempts", dl.attempts());
      n.put("enqueued_at", iso(dl.enqueuedAtMillis()));
      n.put("dead_at", iso(dl.deadAtMillis()));
      n.put("reason", dl.reason());
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
