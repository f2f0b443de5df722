package dev.idem.server.pipeline;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.FanOut;
import dev.idem.Fingerprint;
import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.Reservation;
import dev.idem.Settlement;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.key.NumberOutOfRangeException;
import dev.idem.server.auth.CallerAuthenticator;
import dev.idem.server.auth.CallerException;
import dev.idem.server.config.DedupMode;
import dev.idem.server.config.DeliveryMode;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.logging.LogFields;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.signature.SignatureException;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.transform.Transform;
import dev.idem.server.transform.TransformException;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pipeline's runtime: verifies the signature, checks the JSON, derives the key, decides
 * (dedup), takes the ordering turn, transforms, delivers and settles. Thread-safe; each call to
 * {@link #handle} runs on the caller's thread and blocks until the answer is known.
 *
 * <p>What each outcome answers (the HTTP contract):
 *
 * <ul>
 *   <li>new event, accepted: {@code 202 {"accepted":true,"duplicate":false}} (sync: after delivery;
 *       async: after the key's commit and the outbox entry were written together); in replay mode
 *       the downstream's own answer, which is stored for duplicates;
 *   <li>duplicate: {@code 200 {"accepted":true,"duplicate":true}}, or in replay mode the stored
 *       answer with {@code Idempotent-Replayed: true};
 *   <li>in flight: {@code 409 in_flight} with {@code Retry-After}; replay conflict: {@code 422
 *       key_reused};
 *   <li>no key, bad JSON, duplicate field names, nesting too deep: {@code 400}; bad signature:
 *       {@code 401} (nothing reserved); a missing or invalid bearer token: {@code 401
 *       invalid_token}, a delegation chain too deep: {@code 403 delegation_too_deep}, the JWKS
 *       unreachable: {@code 503 keys_unavailable} (nothing reserved);
 *   <li>store unavailable: {@code 503 store_unavailable} with {@code Retry-After}, nothing
 *       committed;
 *   <li>sync delivery failed after its retries: {@code 502 delivery_failed}, the key released so
 *       the sender's retry is accepted; transform failed: {@code 500 transform_failed}, key
 *       released.
 * </ul>
 *
 * <p>The sender is not authenticated, so error bodies carry the code and a fixed message only; the
 * downstream's address and answer, the jq program and its error, and exceptions go to the log at
 * WARN. A rejected signature is logged through a rate-limited {@code RejectionLog} (pipeline,
 * reason, the provider's delivery id), at most {@code maxRejectionLinesPerSecond} lines a second.
 *
 * <p>A transform that outputs nothing drops the event: the key is released and the answer is {@code
 * 202}. Several outputs fan out, each with its own {@code Idempotency-Key} ({@code <key>:<index>}):
 * in sync mode the key commits once every output was delivered and is released at the first
 * failure; in async mode the key's commit and every output's outbox entry are written in one atomic
 * step.
 */
public final class Pipeline {
  private static final Logger LOG = LoggerFactory.getLogger(Pipeline.class);
  private static final Map<String, String> JSON_HEADERS = Map.of("Content-Type", Answer.JSON);

  /** The longest {@code Retry-After} of an in-flight answer, in seconds. */
  static final long IN_FLIGHT_RETRY_AFTER_MAX = 10;

  /** Seconds a sender is told to wait when the store is unavailable. */
  static final String STORE_RETRY_AFTER = "5";

  private final PipelineSettings settings;
  private final String id;
  private final @Nullable SignatureVerifier verifier;
  private final @Nullable CallerAuthenticator callers;
  private final JsonBodyCheck json;
  private final EventKeys keys;
  private final @Nullable Deduplicator dedup;
  private final @Nullable OutboxStore outbox;
  private final @Nullable Function<byte[], Fingerprint> fingerprints;
  private final @Nullable OrderingStep ordering;
  private final @Nullable Transform transform;
  private final Deliverer deliverer;
  private final @Nullable Function<Delivery, byte[]> outboxEncoder;
  private final Runnable onEnqueued;
  private final IdemMetrics.@Nullable PipelineMeters meters;
  private final TimeSource time;
  private final boolean replay;
  private final boolean async;
  private final RejectionLog rejections;

  private Pipeline(Builder b) {
    this.settings = b.settings;
    this.id = settings.id();
    this.verifier = b.verifier;
    this.callers = b.callers;
    this.json = new JsonBodyCheck(settings.webhook().maxDepth(), settings.webhook().maxBody());
    this.keys = Objects.requireNonNull(b.keys, "keys");
    this.dedup = b.dedup;
    this.outbox = b.outbox;
    this.fingerprints = b.fingerprints;
    this.ordering = b.ordering;
    this.transform = b.transform;
    this.deliverer = Objects.requireNonNull(b.deliverer, "deliverer");
    this.outboxEncoder = b.outboxEncoder;
    this.onEnqueued = b.onEnqueued;
    this.meters = b.meters;
    this.time = b.time;
    this.replay = settings.dedup() != null && settings.dedup().mode() == DedupMode.REPLAY;
    this.async = settings.deliver().mode() == DeliveryMode.ASYNC;
    this.rejections = new RejectionLog(LOG, id, time, b.maxRejectionLinesPerSecond);
    if (async && (dedup == null || outbox == null || outboxEncoder == null)) {
      throw new IllegalArgumentException(
          "pipeline " + id + ": async delivery needs a dedup step, an outbox store and an encoder");
    }
    if (replay && (dedup == null || fingerprints == null)) {
      throw new IllegalArgumentException(
          "pipeline " + id + ": replay mode needs a dedup step and a fingerprint function");
    }
  }

  /**
   * Starts a builder.
   *
   * @param settings the pipeline's settings
   * @return a builder
   */
  public static Builder builder(PipelineSettings settings) {
    return new Builder(settings);
  }

  /**
   * Returns the pipeline id.
   *
   * @return the id
   */
  public String id() {
    return id;
  }

  /**
   * Returns the settings.
   *
   * @return the settings
   */
  public PipelineSettings settings() {
    return settings;
  }

  /**
   * Returns the key rule.
   *
   * @return the keys
   */
  public EventKeys keys() {
    return keys;
  }

  /**
   * Returns the dedup step, if any.
   *
   * @return the deduplicator, or null
   */
  public @Nullable Deduplicator dedup() {
    return dedup;
  }

  /**
   * Returns the outbox, if the pipeline's store has one.
   *
   * @return the outbox store, or null
   */
  public @Nullable OutboxStore outbox() {
    return outbox;
  }

  /**
   * Returns the {@code Idempotency-Key} sent downstream for an event's key: {@code <pipeline>:<64
   * hex digits>}, so two pipelines delivering to one receiver never collide.
   *
   * @param key the event's key
   * @return the header value
   */
  public String idempotencyKey(DedupKey key) {
    return idempotencyKey(id, key);
  }

  /**
   * Returns the {@code Idempotency-Key} a pipeline sends downstream for a key.
   *
   * @param pipeline the pipeline id
   * @param key the event's key
   * @return {@code <pipeline>:<64 hex digits>}
   */
  public static String idempotencyKey(String pipeline, DedupKey key) {
    return pipeline + ":" + key.toHex();
  }

  /**
   * Handles one event.
   *
   * @param request the event
   * @return the answer
   */
  public Answer handle(InboundRequest request) {
    byte[] body = request.body();
    if (verifier != null) {
      try {
        body = verifier.verifiedBody(body, request.headers());
      } catch (SignatureException e) {
        SignatureVerifier v = verifier;
        InboundRequest raw = request;
        rejections.rejected(
            "signature", e.reason().name(), () -> deliveryIdOf(v, raw), 401, e.getMessage());
        return Answer.error(
            401, "invalid_signature", e.getMessage() + "; nothing was recorded for this request");
      }
      // The event's body differs from the raw body only for a wrapped event (GitHub forms).
      request = body == request.body() ? request : new InboundRequest(body, request.headers());
    }
    if (callers != null) {
      try {
        request = request.withPrincipals(callers.principals(request.headers()));
      } catch (CallerException e) {
        return CallerAnswers.refused(e);
      }
    }
    Answer bad = json.check(body);
    if (bad != null) {
      return bad;
    }
    DedupKey key;
    try {
      key = keys.derive(request);
    } catch (NumberOutOfRangeException e) {
      return Answer.error(400, "number_out_of_range", e.getMessage());
    } catch (KeyDerivationException e) {
      return Answer.error(400, "missing_key", e.getMessage());
    }
    if (dedup == null) {
      return process(request, key, null);
    }
    Fingerprint fingerprint = null;
    if (fingerprints != null) {
      try {
        fingerprint = fingerprints.apply(body);
      } catch (NumberOutOfRangeException e) {
        return Answer.error(400, "number_out_of_range", e.getMessage());
      } catch (IdemException e) {
        return Answer.error(
            400, "malformed_json", "the body cannot be fingerprinted: " + e.getMessage());
      }
    }
    Decision decision;
    long started = time.monotonicNanos();
    try {
      decision = dedup.reserve(key, fingerprint);
    } catch (StoreUnavailableException e) {
      return storeUnavailable(e, key);
    }
    if (meters != null) {
      meters.reserveTook(time.monotonicNanos() - started);
    }
    if (LOG.isDebugEnabled()) {
      String name = decisionName(decision);
      LogFields.decision(
          id,
          key.toHex(),
          name,
          () -> LOG.debug("decision pipeline={} key={} decision={}", id, key.toHex(), name));
    }
    if (decision instanceof Decision.Acquired a) {
      if (leaseRanOut(a.reservation())) {
        return leaseExpired(a.reservation(), key, "before processing (the reserve was slow)", 0);
      }
      return process(request, key, a.reservation());
    }
    if (decision instanceof Decision.Duplicate d) {
      byte[] stored = d.result();
      if (replay && stored != null) {
        return StoredAnswer.decode(stored).withHeader("Idempotent-Replayed", "true");
      }
      return Answer.DUPLICATE;
    }
    if (decision instanceof Decision.InFlight f) {
      // The holder usually finishes in milliseconds; its lease only bounds a crashed holder. So a
      // sender is told to come back soon (then it gets the duplicate answer), at most in 10 s.
      long waitMs = Math.max(1_000, f.leaseUntilMillis() - time.wallMillis());
      String seconds = Long.toString(Math.min(IN_FLIGHT_RETRY_AFTER_MAX, (waitMs + 999) / 1_000));
      return Answer.error(
          409,
          "in_flight",
          "an event with this key is being processed now; retry later (the answer will then be a"
              + " duplicate, or it is processed if that attempt failed)",
          Map.of("Retry-After", seconds));
    }
    return Answer.error(
        422,
        "key_reused",
        "this key was already used with a different payload; send a new key for a new request");
  }

  /** The provider's delivery id of a rejected request, for the log line; null if it has none. */
  private static @Nullable String deliveryIdOf(SignatureVerifier v, InboundRequest request) {
    try {
      return v.deliveryId(request.body(), request.headers()).orElse(null);
    } catch (RuntimeException e) {
      return null; // an unsigned body need not parse; the line just has no delivery id
    }
  }

  private static String decisionName(Decision d) {
    if (d instanceof Decision.Acquired) {
      return "pass";
    }
    if (d instanceof Decision.Duplicate) {
      return "duplicate";
    }
    return d instanceof Decision.InFlight ? "in_flight" : "conflict";
  }

  private Answer process(InboundRequest request, DedupKey key, @Nullable Reservation r) {
    OrderingStep.Turn turn = null;
    try {
      if (ordering != null) {
        turn = ordering.enter(request);
      }
      List<byte[]> outputs =
          transform == null ? List.of(request.body()) : transform.apply(request.body());
      String orderingKey = turn == null ? null : turn.key();
      if (outputs.isEmpty()) {
        release(r, key, "the transform dropped it");
        return Answer.ACCEPTED;
      }
      return async
          ? enqueue(key, Objects.requireNonNull(r), orderingKey, outputs)
          : deliverNow(key, r, orderingKey, outputs);
    } catch (TransformException e) {
      release(r, key, "the transform failed");
      // The jq program and its error are the operator's business, not the sender's.
      LOG.warn("pipeline={} key={} transform failed: {}", id, key.toHex(), e.getMessage());
      return Answer.error(
          500,
          "transform_failed",
          "the pipeline's transform failed on this event; nothing was delivered and the key was"
              + " released, so a retry is processed again (the service's log says why)");
    } catch (StoreUnavailableException e) {
      release(r, key, "the store is unavailable");
      return storeUnavailable(e, key);
    } catch (RuntimeException e) {
      release(r, key, "processing failed");
      LOG.warn("pipeline={} key={} processing failed", id, key.toHex(), e);
      return Answer.error(
          500, "internal_error", "processing failed; the key was released, retry later");
    } finally {
      if (turn != null) {
        turn.close();
      }
    }
  }

  private Answer deliverNow(
      DedupKey key, @Nullable Reservation r, @Nullable String orderingKey, List<byte[]> outputs) {
    if (leaseRanOut(r)) {
      return leaseExpired(r, key, "before delivery", 0);
    }
    if (outputs.size() == 1) {
      DeliveryOutcome outcome =
          deliverer.deliver(
              new Delivery(id, idempotencyKey(key), orderingKey, outputs.get(0), JSON_HEADERS));
      if (outcome instanceof DeliveryOutcome.Failed f) {
        release(r, key, "delivery failed");
        return deliveryFailed(key, f);
      }
      DeliveryOutcome.Delivered d = (DeliveryOutcome.Delivered) outcome;
      Answer answer = replay ? replayAnswer(d) : Answer.ACCEPTED;
      commit(r, key, replay ? StoredAnswer.encode(answer) : null);
      return answer;
    }
    FanOut fan = r == null ? null : r.fanOut(outputs.size());
    for (int i = 0; i < outputs.size(); i++) {
      FanOut.Child child = fan == null ? null : fan.child();
      if (i > 0 && leaseRanOut(r)) {
        // The outputs delivered so far carry their own Idempotency-Keys; a resend repeats them.
        settleChild(child, false, key);
        return leaseExpired(null, key, "before delivering output " + i, i);
      }
      DeliveryOutcome outcome =
          deliverer.deliver(
              new Delivery(
                  id, idempotencyKey(key) + ":" + i, orderingKey, outputs.get(i), JSON_HEADERS));
      if (outcome instanceof DeliveryOutcome.Failed f) {
        settleChild(child, false, key);
        return deliveryFailed(key, f);
      }
      settleChild(child, true, key);
    }
    return Answer.ACCEPTED;
  }

  private void settleChild(FanOut.@Nullable Child child, boolean ok, DedupKey key) {
    if (child == null) {
      return;
    }
    try {
      if (ok) {
        child.succeeded();
      } else {
        child.failed();
      }
    } catch (IdemException e) {
      // Delivered or not, the answer stands; an unsettled key heals when its lease runs out.
      LOG.warn("pipeline={} key={} fan-out settlement failed: {}", id, key.toHex(), e.getMessage());
    }
  }

  private static Answer replayAnswer(DeliveryOutcome.Delivered d) {
    byte[] body = d.responseBody();
    if (d.status() >= 200 && d.status() < 300 && body != null) {
      String type = d.contentType() == null ? Answer.JSON : d.contentType();
      return new Answer(d.status(), type, Map.of(), body);
    }
    return Answer.ACCEPTED;
  }

  private Answer enqueue(
      DedupKey key, Reservation r, @Nullable String orderingKey, List<byte[]> outputs) {
    Function<Delivery, byte[]> encoder = Objects.requireNonNull(outboxEncoder);
    String idempotencyKey = idempotencyKey(key);
    List<OutboxMessage> messages = new ArrayList<>(outputs.size());
    for (int i = 0; i < outputs.size(); i++) {
      // Fan-out children get their own Idempotency-Key, as in sync mode.
      String childKey = outputs.size() == 1 ? idempotencyKey : idempotencyKey + ":" + i;
      Delivery delivery = new Delivery(id, childKey, orderingKey, outputs.get(i), JSON_HEADERS);
      messages.add(new OutboxMessage(id, key, encoder.apply(delivery)));
    }
    // The key's commit and every message are written together: accepted whole or not at all.
    if (leaseRanOut(r)) {
      return leaseExpired(r, key, "before the accept was written", 0);
    }
    if (r.commitAndEnqueue(messages) == Settlement.LEASE_LOST) {
      LOG.warn(
          "pipeline={} key={} lease ran out before the accept was written; nothing was enqueued",
          id,
          key.toHex());
      return Answer.error(
          503,
          "lease_expired",
          "processing took longer than dedup.lease and the key was taken over; nothing was"
              + " recorded for this request, retry later",
          Map.of("Retry-After", STORE_RETRY_AFTER));
    }
    onEnqueued.run();
    return Answer.ACCEPTED;
  }

  /**
   * Whether the reservation's lease has run out: then another worker may hold the key, and what
   * this one delivers may be delivered again, so it must not deliver.
   */
  private boolean leaseRanOut(@Nullable Reservation r) {
    return r != null && time.wallMillis() >= r.leaseUntil().toEpochMilli();
  }

  /**
   * Releases (a no-op if the key was taken over) and answers 503 instead of delivering.
   *
   * @param delivered how many fan-out outputs were delivered before the lease ran out
   */
  private Answer leaseExpired(@Nullable Reservation r, DedupKey key, String when, int delivered) {
    release(r, key, "its lease ran out " + when);
    LOG.warn(
        "pipeline={} key={} lease ran out {}; {} delivered, answered 503",
        id,
        key.toHex(),
        when,
        delivered == 0 ? "nothing" : delivered + " outputs");
    return Answer.error(
        503,
        "lease_expired",
        "processing took longer than dedup.lease (a slow store or ordering wait); "
            + (delivered == 0
                ? "nothing was delivered for this request"
                : "only the first "
                    + delivered
                    + " outputs were delivered (a resend repeats them with the same"
                    + " Idempotency-Keys)")
            + ", retry later",
        Map.of("Retry-After", STORE_RETRY_AFTER));
  }

  /**
   * The sender learns only that delivery failed; the downstream's address, status and answer go to
   * the log (each attempt was logged by the deliverer, this line says what the sender was told).
   */
  private Answer deliveryFailed(DedupKey key, DeliveryOutcome.Failed f) {
    LOG.warn(
        "pipeline={} key={} delivery failed, answered 502 and released the key: {}",
        id,
        key.toHex(),
        f.error());
    return Answer.error(
        502,
        "delivery_failed",
        "the event could not be delivered downstream; nothing was recorded for it, so a retry of"
            + " this request is accepted");
  }

  private void commit(@Nullable Reservation r, DedupKey key, byte @Nullable [] result) {
    if (r == null) {
      return;
    }
    try {
      if (r.commit(result) == Settlement.LEASE_LOST) {
        LOG.warn(
            "pipeline={} key={} delivered, but the lease had run out before the commit; a resend"
                + " may be delivered again (downstream sees the same Idempotency-Key)",
            id,
            key.toHex());
      }
    } catch (StoreUnavailableException e) {
      LOG.warn(
          "pipeline={} key={} delivered, but the commit failed ({}); the key heals when its lease"
              + " runs out, and a resend may be delivered again with the same Idempotency-Key",
          id,
          key.toHex(),
          e.getMessage());
    }
  }

  private void release(@Nullable Reservation r, DedupKey key, String why) {
    if (r == null || r.settlement() != null) {
      return;
    }
    try {
      r.release();
      if (LOG.isDebugEnabled()) {
        LogFields.decision(
            id,
            key.toHex(),
            "released",
            () -> LOG.debug("released pipeline={} key={} because {}", id, key.toHex(), why));
      }
    } catch (StoreUnavailableException e) {
      LOG.warn(
          "pipeline={} key={} could not be released ({}); it unblocks when its lease runs out",
          id,
          key.toHex(),
          e.getMessage());
    } catch (IdemException e) {
      LOG.warn("pipeline={} key={} release failed: {}", id, key.toHex(), e.getMessage());
    }
  }

  private Answer storeUnavailable(StoreUnavailableException e, DedupKey key) {
    if (meters != null) {
      meters.storeUnavailable();
    }
    LogFields.decision(
        id,
        key.toHex(),
        "store_unavailable",
        () ->
            LOG.warn("pipeline={} key={} store unavailable: {}", id, key.toHex(), e.getMessage()));
    return Answer.error(
        503,
        "store_unavailable",
        "the dedup store is unavailable; nothing was committed, retry later",
        Map.of("Retry-After", STORE_RETRY_AFTER));
  }

  /** Assembles a {@link Pipeline}. Not thread-safe. */
  public static final class Builder {
    private final PipelineSettings settings;
    private @Nullable SignatureVerifier verifier;
    private @Nullable CallerAuthenticator callers;
    private @Nullable EventKeys keys;
    private @Nullable Deduplicator dedup;
    private @Nullable OutboxStore outbox;
    private @Nullable Function<byte[], Fingerprint> fingerprints;
    private @Nullable OrderingStep ordering;
    private @Nullable Transform transform;
    private @Nullable Deliverer deliverer;
    private @Nullable Function<Delivery, byte[]> outboxEncoder;
    private Runnable onEnqueued = () -> {};
    private IdemMetrics.@Nullable PipelineMeters meters;
    private TimeSource time = TimeSource.system();
    private int maxRejectionLinesPerSecond = RejectionLog.DEFAULT_MAX_PER_SECOND;

    private Builder(PipelineSettings settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
    }

    /**
     * Sets the signature verifier.
     *
     * @param verifier the verifier, or null for none
     * @return this builder
     */
    public Builder verifier(@Nullable SignatureVerifier verifier) {
      this.verifier = verifier;
      return this;
    }

    /**
     * Sets the caller authentication; its principal chain feeds the default key.
     *
     * @param callers the authenticator, or null for none
     * @return this builder
     */
    public Builder callers(@Nullable CallerAuthenticator callers) {
      this.callers = callers;
      return this;
    }

    /**
     * Sets the key rule.
     *
     * @param keys the key rule
     * @return this builder
     */
    public Builder keys(EventKeys keys) {
      this.keys = keys;
      return this;
    }

    /**
     * Sets the dedup step.
     *
     * @param dedup the deduplicator, or null for none
     * @param outbox its store's outbox, or null if it has none
     * @return this builder
     */
    public Builder dedup(@Nullable Deduplicator dedup, @Nullable OutboxStore outbox) {
      this.dedup = dedup;
      this.outbox = outbox;
      return this;
    }

    /**
     * Sets how payload fingerprints are computed (replay mode).
     *
     * @param fingerprints body to fingerprint
     * @return this builder
     */
    public Builder fingerprints(@Nullable Function<byte[], Fingerprint> fingerprints) {
      this.fingerprints = fingerprints;
      return this;
    }

    /**
     * Sets the ordering step.
     *
     * @param ordering the step, or null for none
     * @return this builder
     */
    public Builder ordering(@Nullable OrderingStep ordering) {
      this.ordering = ordering;
      return this;
    }

    /**
     * Sets the transform.
     *
     * @param transform the transform, or null for none
     * @return this builder
     */
    public Builder transform(@Nullable Transform transform) {
      this.transform = transform;
      return this;
    }

    /**
     * Sets the inline deliverer (sync mode).
     *
     * @param deliverer the deliverer
     * @return this builder
     */
    public Builder deliverer(Deliverer deliverer) {
      this.deliverer = deliverer;
      return this;
    }

    /**
     * Sets how deliveries become outbox payloads (async mode).
     *
     * @param encoder delivery to bytes
     * @return this builder
     */
    public Builder outboxEncoder(@Nullable Function<Delivery, byte[]> encoder) {
      this.outboxEncoder = encoder;
      return this;
    }

    /**
     * Sets what runs after an event was enqueued (async mode): wakes the dispatcher up.
     *
     * @param onEnqueued called on the request thread after each accepted enqueue; must be fast
     * @return this builder
     */
    public Builder onEnqueued(Runnable onEnqueued) {
      this.onEnqueued = Objects.requireNonNull(onEnqueued, "onEnqueued");
      return this;
    }

    /**
     * Sets the meters that record store latency and store outages.
     *
     * @param meters the pipeline's meters, or null for none
     * @return this builder
     */
    public Builder meters(IdemMetrics.@Nullable PipelineMeters meters) {
      this.meters = meters;
      return this;
    }

    /**
     * Sets the clock.
     *
     * @param time the time source
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Sets how many rejected requests (bad signatures) are logged per second at most; the lines
     * left out are counted in the next line (default 10).
     *
     * @param max at least 1
     * @return this builder
     * @throws IllegalArgumentException if below 1
     */
    public Builder maxRejectionLinesPerSecond(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("max rejection lines per second must be positive");
      }
      this.maxRejectionLinesPerSecond = max;
      return this;
    }

    /**
     * Returns the pipeline.
     *
     * @return a new pipeline
     */
    public Pipeline build() {
      return new Pipeline(this);
    }
  }
}
