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
import dev.idem.key.CanonicalJson;
import dev.idem.key.NumberOutOfRangeException;
import dev.idem.server.config.DedupMode;
import dev.idem.server.config.DeliveryMode;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.deliver.Sleeper;
import dev.idem.server.logging.LogFields;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.transform.Transform;
import dev.idem.server.transform.TransformException;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pipeline's runtime: checks the JSON, derives the key, decides (dedup), takes the ordering
 * turn, transforms, delivers and settles, and says what it decided as a transport-neutral {@link
 * Outcome}. Each source's edge (the webhook's HTTP answer, a broker's acknowledgement) turns the
 * outcome into its own answer; source-only steps (signatures, caller tokens) run at that edge,
 * before {@link #process}. Thread-safe; each call runs on the caller's thread and blocks until the
 * outcome is known.
 *
 * <p>The reservation is settled in one place ({@link #settle}): committed when the work is done
 * (sync: after delivery; async: the key's commit and the outbox entries written together), released
 * when it failed or the transform dropped the event, fan-out children settled there too. While the
 * work runs, one shared sweep ({@code LeaseRenewals}) extends the reservation's lease once a third
 * of the lease has passed since its last renewal (so before half of it has run), so a short lease
 * (the service's default is {@link dev.idem.server.config.DedupSettings#DEFAULT_LEASE}) bounds how
 * long a dead instance blocks a key, and long work on a live one keeps its key.
 *
 * <p>The body is read once ({@link JsonBodyCheck#read}: validated with one depth limit and put in
 * canonical form in the same pass) before anything else looks at it; the key, the ordering key, the
 * sequence and the fingerprint then read that result ({@link InboundRequest#canonical()}), not the
 * raw bytes. The transform gets the raw bytes: jq sees the body as it was sent (member order,
 * number spelling), which the canonical form does not keep.
 *
 * <p>The sender is not authenticated, so outcome messages say what to do and never carry the
 * downstream's address or answer, the jq program or its error, or exceptions: those go to the log.
 *
 * <p>A transform that outputs nothing drops the event: the key is released and the outcome is
 * {@link Outcome.Accepted} with {@code dropped}. Several outputs fan out, each with its own {@code
 * Idempotency-Key} ({@code <key>:<index>}): in sync mode the key commits once every output was
 * delivered and is released at the first failure; in async mode the key's commit and every output's
 * outbox entry are written in one atomic step.
 */
public final class Pipeline {
  private static final Logger LOG = LoggerFactory.getLogger(Pipeline.class);

  /** The most lost-lease recommits of {@link #commitLater} that wait at a time. */
  static final int MAX_WAITING_RECOMMITS = 10_000;

  /**
   * Runs {@link #commitLater}'s recommits after a lost lease: one daemon thread ({@code
   * idem-recommit}) for the JVM, at most {@link #MAX_WAITING_RECOMMITS} waiting, an idle thread
   * ending after a minute. They wait for the store, so they must leave the thread that completed
   * the commit (a RocksDB group's leader, which completes its whole group); {@code
   * CompletableFuture.runAsync} would start a thread per recommit on two cores or fewer (its
   * default executor there), so a burst of lost leases while the store is slow would start a thread
   * per key.
   */
  private static final ThreadPoolExecutor RECOMMITS = recommitThread();

  private static ThreadPoolExecutor recommitThread() {
    ThreadPoolExecutor e =
        new ThreadPoolExecutor(
            1,
            1,
            1,
            TimeUnit.MINUTES,
            new ArrayBlockingQueue<>(MAX_WAITING_RECOMMITS),
            r -> {
              Thread t = new Thread(r, "idem-recommit");
              t.setDaemon(true);
              return t;
            });
    e.allowCoreThreadTimeOut(true);
    return e;
  }

  private static final Map<String, String> JSON_HEADERS =
      Map.of("Content-Type", "application/json");

  /**
   * The header that carries the fence of the shared ordering lock downstream: a new value each time
   * the key's lock changes hands, so a receiver can tell a redelivery after an owner died.
   */
  public static final String FENCE = "Idem-Fence";

  /** The longest wait an in-flight outcome suggests, in seconds. */
  static final long IN_FLIGHT_RETRY_AFTER_MAX = 10;

  /** Seconds a sender is told to wait when the store is unavailable or a lease ran out. */
  public static final long STORE_RETRY_AFTER_SECONDS = 5;

  /** How many times a delivered event's commit is tried while the store is unavailable. */
  static final int COMMIT_ATTEMPTS = 3;

  /** The pause before the second commit attempt; the third waits twice as long. */
  static final long COMMIT_RETRY_PAUSE_MILLIS = 50;

  /** No commit retry starts this long after the first failure (each attempt has its timeout). */
  static final long COMMIT_RETRY_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final PipelineSettings settings;
  private final String id;
  private final JsonBodyCheck json;
  private final EventKeys keys;
  private final @Nullable Deduplicator dedup;
  private final @Nullable OutboxStore outbox;
  private final @Nullable Function<byte[], Fingerprint> fingerprints;
  private final boolean canonicalFingerprints;
  private final @Nullable OrderingStep ordering;
  private final @Nullable SequenceGuard sequences;
  private final @Nullable PoisonKeys poison;
  private final @Nullable Transform transform;
  private final Deliverer deliverer;
  private final @Nullable Function<Delivery, byte[]> outboxEncoder;
  private final Runnable onEnqueued;
  private final IdemMetrics.@Nullable PipelineMeters meters;
  private final TimeSource time;
  private final Sleeper sleeper;
  private final @Nullable ScheduledExecutorService renewals;
  private final @Nullable LeaseRenewals leases;
  private final boolean replay;
  private final boolean async;
  private final boolean batchCommits;

  private Pipeline(Builder b) {
    this.settings = b.settings;
    this.id = settings.id();
    this.json = new JsonBodyCheck(b.maxDepth, b.maxBody);
    this.keys = Objects.requireNonNull(b.keys, "keys");
    this.dedup = b.dedup;
    this.outbox = b.outbox;
    this.fingerprints = b.fingerprints;
    this.canonicalFingerprints = b.canonicalFingerprints;
    this.ordering = b.ordering;
    this.sequences = b.sequences;
    this.poison = b.poison;
    this.transform = b.transform;
    this.deliverer = Objects.requireNonNull(b.deliverer, "deliverer");
    this.outboxEncoder = b.outboxEncoder;
    this.onEnqueued = b.onEnqueued;
    this.meters = b.meters;
    this.time = b.time;
    this.sleeper = b.sleeper;
    this.renewals = b.renewals;
    this.leases =
        renewals == null || dedup == null
            ? null
            : new LeaseRenewals(
                renewals, dedup.config().lease().toMillis() / 3, time, this::renewHeld);
    this.replay = settings.dedup() != null && settings.dedup().mode() == DedupMode.REPLAY;
    this.async = settings.deliver().mode() == DeliveryMode.ASYNC;
    this.batchCommits = b.batchCommits;
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
   * Returns the pipeline's poison-key guard (sync delivery with an ordering key).
   *
   * @return the guard, or null if the pipeline has none
   */
  public @Nullable PoisonKeys poisonKeys() {
    return poison;
  }

  /**
   * Returns whether the pipeline stores the first answer of each key and replays it (replay mode).
   *
   * @return true in replay mode
   */
  public boolean replays() {
    return replay;
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
    int n = pipeline.length();
    for (int i = 0; i < n; i++) {
      if (pipeline.charAt(i) > 0xFF) {
        return pipeline + ":" + key.toHex();
      }
    }
    // One Latin-1 array and the string's own copy of it, instead of the hex digits' char array,
    // their string and the concatenation.
    byte[] b = new byte[n + 1 + 64];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) pipeline.charAt(i);
    }
    b[n] = ':';
    for (int w = 0; w < 4; w++) {
      long v = key.word(w);
      int at = n + 1 + w * 16;
      for (int i = 15; i >= 0; i--) {
        b[at + i] = HEX_DIGITS[(int) (v & 0xF)];
        v >>>= 4;
      }
    }
    return new String(b, StandardCharsets.ISO_8859_1);
  }

  private static final byte[] HEX_DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  /**
   * Processes one event: the pipeline's single entry point for every source.
   *
   * @param event the event, after the source's own checks (signature, caller)
   * @return what was decided; the reservation is settled when this returns
   */
  public Outcome process(InboundRequest event) {
    JsonBodyCheck.Read read = json.read(event.body());
    if (read.rejected() != null) {
      return read.rejected();
    }
    if (read.canonical() != null) {
      event = event.withCanonical(read.canonical());
    }
    DedupKey key;
    try {
      key = keys.derive(event);
    } catch (NumberOutOfRangeException e) {
      return badInput("number_out_of_range", e.getMessage());
    } catch (KeyDerivationException e) {
      return badInput("missing_key", e.getMessage());
    }
    Deduplicator d = dedup;
    if (d == null) {
      return run(event, key, null);
    }
    Fingerprint fingerprint = null;
    if (fingerprints != null) {
      try {
        fingerprint =
            canonicalFingerprints && event.canonical() != null
                ? event.canonical().fingerprint()
                : fingerprints.apply(event.body());
      } catch (NumberOutOfRangeException e) {
        return badInput("number_out_of_range", e.getMessage());
      } catch (IdemException e) {
        return badInput("malformed_json", "the body cannot be fingerprinted: " + e.getMessage());
      }
    }
    Decision decision;
    long started = time.monotonicNanos();
    try {
      decision = d.reserve(key, fingerprint);
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
      return runReserved(event, key, a.reservation());
    }
    return notAcquired(key, decision);
  }

  /**
   * Processes one event as {@link #process} does, but does not wait for the last step where that
   * step is a plain commit whose durability the store provides later ({@link
   * Reservation#commitAsync}: RocksDB's group commit): the stage then completes with the outcome
   * {@link #process} would have returned, once the commit is as durable as it would have been when
   * {@link #process} returned, on the thread that made it so. Every other event (and every pipeline
   * with ordering, sequences, poison keys, async delivery or replay, where later bookkeeping
   * depends on the commit) completes before this returns, exactly as {@link #process}. A source
   * whose answer can wait for a callback (the HTTP edge) uses this, so no request thread parks for
   * the store's sync; the stage's dependents must not block.
   *
   * @param event the event, after the source's own checks (signature, caller)
   * @return completes with what was decided, once the reservation is settled
   */
  public CompletionStage<Outcome> processAsync(InboundRequest event) {
    if (!canDeferCommit()) {
      return CompletableFuture.completedFuture(process(event));
    }
    DeferredCommit deferred = new DeferredCommit(this);
    DeferredCommit outer = DEFERRED.get();
    DEFERRED.set(deferred);
    Outcome outcome;
    try {
      outcome = process(event);
    } finally {
      DEFERRED.set(outer);
    }
    Reservation r = deferred.reservation;
    if (r == null) {
      return CompletableFuture.completedFuture(outcome);
    }
    return commitLater(r, Objects.requireNonNull(deferred.key), outcome);
  }

  /**
   * Whether {@link #processAsync} may leave an event's plain commit to the store's sync: the store
   * commits asynchronously (the memory store, for one, does not) and nothing after the commit
   * depends on it (no ordering turn, sequence or poison bookkeeping, no outbox, no stored result),
   * as for a batch's held-back commits.
   */
  private boolean canDeferCommit() {
    Deduplicator d = dedup;
    return d != null
        && d.commitsAsynchronously() // else commitAsync commits at once: no stage to build
        && ordering == null
        && sequences == null
        && poison == null
        && !async
        && !replay;
  }

  /**
   * The commit left by {@link #settle} to {@link #processAsync}'s caller on this thread. Per thread
   * for the same reason as {@link #BATCH}; never set while a batch runs.
   */
  private static final ThreadLocal<@Nullable DeferredCommit> DEFERRED = new ThreadLocal<>();

  /**
   * The one reservation of a {@link #processAsync} call whose plain commit was left to it; only its
   * own pipeline's event (not one that pipeline's work ran through another pipeline on this
   * thread).
   */
  private static final class DeferredCommit {
    final Pipeline owner;
    @Nullable Reservation reservation;
    @Nullable DedupKey key;

    DeferredCommit(Pipeline owner) {
      this.owner = owner;
    }

    boolean hold(Pipeline settling, @Nullable Reservation r, DedupKey k) {
      if (settling != owner || r == null || reservation != null) {
        return false;
      }
      reservation = r;
      key = k;
      return true;
    }
  }

  /**
   * {@link #commit}, answered when the commit is durable: the outcome stands whatever the commit
   * says, as there (the work was done); a lost lease is recorded again off the store's thread,
   * since that waits for the store.
   */
  private CompletionStage<Outcome> commitLater(Reservation r, DedupKey key, Outcome outcome) {
    CompletionStage<Settlement> committed;
    try {
      committed = r.commitAsync(null);
    } catch (RuntimeException e) {
      committed = CompletableFuture.failedFuture(e);
    }
    return committed.handle(
        (settlement, error) -> {
          if (error != null) {
            Throwable cause =
                error instanceof CompletionException && error.getCause() != null
                    ? error.getCause()
                    : error;
            if (!(cause instanceof StoreUnavailableException)) {
              LOG.warn("pipeline={} key={} commit failed", id, key.toHex(), cause);
            } else {
              LOG.warn(
                  "pipeline={} key={} delivered, but the commit failed ({}); the key heals when"
                      + " its lease runs out, and a resend may be delivered again with the same"
                      + " Idempotency-Key",
                  id,
                  key.toHex(),
                  cause.getMessage());
            }
          } else if (settlement == Settlement.LEASE_LOST) {
            recommitLater(key);
          }
          return outcome;
        });
  }

  /** {@link #recommit} on the recommit thread; past its bound, a WARN and no recommit. */
  private void recommitLater(DedupKey key) {
    try {
      RECOMMITS.execute(
          () -> {
            boolean again;
            try {
              again = recommit(key, null);
            } catch (RuntimeException e) {
              LOG.warn(
                  "pipeline={} key={} delivered, but its lease had run out before the commit and"
                      + " committing it again failed ({}); it may be delivered again (downstream"
                      + " sees the same Idempotency-Key)",
                  id,
                  key.toHex(),
                  e.toString());
              return;
            }
            if (!again) {
              LOG.warn(
                  "pipeline={} key={} delivered, but the lease had run out before the commit"
                      + " and another worker holds the key now; it may be delivered again"
                      + " (downstream sees the same Idempotency-Key)",
                  id,
                  key.toHex());
            }
          });
    } catch (RejectedExecutionException e) {
      LOG.warn(
          "pipeline={} key={} delivered, but its lease had run out before the commit and {}"
              + " recommits already wait; it is not committed again, so a resend is accepted and"
              + " delivered again (downstream sees the same Idempotency-Key)",
          id,
          key.toHex(),
          MAX_WAITING_RECOMMITS);
    }
  }

  /**
   * Processes a batch of events (a broker's poll) in order, with one batch reserve and one batch
   * commit where the store allows: each event's outcome is the one {@link #process} would give, and
   * the events are delivered one after another in the batch's order. An event whose key repeats an
   * earlier one of the batch is decided after that one settled (so it is a duplicate, not in
   * flight). In replay mode (fingerprints) each event is reserved on its own.
   *
   * <p>The batch path, step by step:
   *
   * <ol>
   *   <li>check each body and derive its key (a bad one gets its rejected outcome);
   *   <li>reserve the batch's distinct keys with one {@code reserveAll};
   *   <li>renew the acquired reservations' leases from one timer while the batch runs;
   *   <li>run each acquired event in order (order, transform, deliver); with {@link
   *       Builder#batchCommits batch commits} a plain commit (sync delivery, no ordering step,
   *       nothing to store) is settled with the batch, any other settlement at once;
   *   <li>settle the batch: one {@code commitAll} for the commits held back ({@link #settleAll}),
   *       before an event whose key repeats one of them, and before this returns.
   * </ol>
   *
   * <p>A store outage is logged here at DEBUG only (per key): a source that calls this logs the
   * outage once for the batch.
   *
   * @param events the events, in the source's order
   * @return one outcome per event, in order; every reservation is settled when this returns
   */
  public List<Outcome> processAll(List<InboundRequest> events) {
    Deduplicator d = dedup;
    if (d == null || fingerprints != null || events.isEmpty()) {
      List<Outcome> out = new ArrayList<>(events.size());
      for (InboundRequest e : events) {
        out.add(process(e));
      }
      return out;
    }
    int n = events.size();
    Outcome[] out = new Outcome[n];
    DedupKey[] keyOf = new DedupKey[n];
    List<DedupKey> batch = new ArrayList<>(n);
    int[] batched = new int[n];
    Set<DedupKey> seen = new HashSet<>(n * 2);
    // Each event with its body read once (validated and canonical), for the key and the run.
    InboundRequest[] readEvents = new InboundRequest[n];
    for (int i = 0; i < n; i++) {
      InboundRequest e = events.get(i);
      JsonBodyCheck.Read read = json.read(e.body());
      if (read.rejected() != null) {
        out[i] = read.rejected();
        continue;
      }
      if (read.canonical() != null) {
        e = e.withCanonical(read.canonical());
      }
      readEvents[i] = e;
      try {
        keyOf[i] = keys.derive(e);
      } catch (NumberOutOfRangeException ex) {
        out[i] = badInput("number_out_of_range", ex.getMessage());
        continue;
      } catch (KeyDerivationException ex) {
        out[i] = badInput("missing_key", ex.getMessage());
        continue;
      }
      if (seen.add(keyOf[i])) {
        batched[batch.size()] = i;
        batch.add(keyOf[i]);
      }
    }
    List<Decision> decisions;
    long started = time.monotonicNanos();
    try {
      decisions = batch.isEmpty() ? List.of() : d.reserveAll(batch);
    } catch (StoreUnavailableException ex) {
      for (int i = 0; i < n; i++) {
        if (out[i] == null) {
          out[i] = storeUnavailableInBatch(ex, keyOf[i]);
        }
      }
      return List.of(out);
    }
    if (meters != null && !batch.isEmpty()) {
      meters.reserveTook(time.monotonicNanos() - started);
    }
    Decision[] decisionOf = new Decision[n];
    List<Reservation> acquired = new ArrayList<>(batch.size());
    for (int j = 0; j < batch.size(); j++) {
      Decision decision = decisions.get(j);
      decisionOf[batched[j]] = decision;
      if (decision instanceof Decision.Acquired a) {
        acquired.add(a.reservation());
      }
    }
    // Commits are held back only where nothing after the commit depends on it: no ordering turn
    // (released after the event, before a held-back commit), no sequence or poison bookkeeping, and
    // sync delivery (async writes the key with its outbox entries).
    Batch settling = new Batch(canHoldCommits() ? acquired : List.of());
    ScheduledFuture<?> renewal = startRenewals(acquired);
    Batch outer = BATCH.get();
    BATCH.set(settling);
    try {
      for (int i = 0; i < n; i++) {
        if (out[i] != null) {
          continue;
        }
        Decision decision = decisionOf[i];
        if (decision == null) {
          // Its key repeats an earlier event of the batch: decided after that one is settled.
          settleAll(settling);
          out[i] = process(events.get(i));
        } else if (decision instanceof Decision.Acquired a) {
          Reservation r = a.reservation();
          out[i] =
              leaseRanOut(r)
                  ? settle(
                      r, keyOf[i], Step.leaseExpired("before processing (the reserve was slow)", 0))
                  : run(readEvents[i], keyOf[i], r);
        } else {
          out[i] = notAcquired(keyOf[i], decision);
        }
      }
    } finally {
      try {
        settleAll(settling);
      } finally {
        BATCH.set(outer);
        if (renewal != null) {
          renewal.cancel(false);
        }
      }
    }
    return List.of(out);
  }

  /** Whether a batch's plain commits may wait for the batch's {@link #settleAll}. */
  private boolean canHoldCommits() {
    return batchCommits
        && ordering == null
        && sequences == null
        && poison == null
        && !async
        && !replay;
  }

  /**
   * The batch being run on this thread by {@link #processAll}: {@link #settle} holds back the plain
   * commits of its reservations, {@link #settleAll} commits them. Per thread because one pipeline
   * runs many sources' batches at once, and each batch runs on its caller's thread.
   */
  private static final ThreadLocal<@Nullable Batch> BATCH = new ThreadLocal<>();

  /** One batch's reservations whose commits may be held back, and those held back so far. */
  private static final class Batch {
    final Set<Reservation> holdable = Collections.newSetFromMap(new IdentityHashMap<>());
    final List<Reservation> held = new ArrayList<>();
    final List<DedupKey> heldKeys = new ArrayList<>();

    Batch(List<Reservation> holdable) {
      this.holdable.addAll(holdable);
    }

    /** Holds the commit back if the reservation is one of the batch's; false otherwise. */
    boolean hold(@Nullable Reservation r, DedupKey key) {
      if (r == null || !holdable.remove(r)) {
        return false;
      }
      held.add(r);
      heldKeys.add(key);
      return true;
    }
  }

  /**
   * Renews the leases of a batch's open reservations every third of the lease while the batch runs,
   * from one timer task (not one per event).
   */
  private @Nullable ScheduledFuture<?> startRenewals(List<Reservation> acquired) {
    ScheduledExecutorService timer = renewals;
    Deduplicator d = dedup;
    if (timer == null || d == null || acquired.isEmpty()) {
      return null;
    }
    long every = Math.max(1, d.config().lease().toMillis() / 3);
    List<Reservation> open = new ArrayList<>(acquired);
    try {
      return timer.scheduleWithFixedDelay(
          () -> {
            open.removeIf(r -> r.settlement() != null || !renewOne(r));
            if (open.isEmpty()) {
              throw new CancellationException(); // all settled: stop
            }
          },
          every,
          every,
          TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      return null; // shutting down: the lease alone bounds the work
    }
  }

  /** Renews one of a batch's leases; false when it should not be renewed again. */
  private boolean renewOne(Reservation r) {
    try {
      renew(r, r.key());
      return true;
    } catch (CancellationException e) {
      return false;
    }
  }

  /**
   * Settles a batch's held-back commits with one {@code commitAll}: the batch form of {@link
   * #settle}'s commit, with the same answers to a lost lease (commit again if nobody took the key)
   * and to an unavailable store (the delivered events stay accepted; their keys heal when their
   * leases run out).
   */
  private void settleAll(Batch b) {
    if (b.held.isEmpty()) {
      return;
    }
    List<Reservation> held = List.copyOf(b.held);
    List<DedupKey> heldKeys = List.copyOf(b.heldKeys);
    b.held.clear();
    b.heldKeys.clear();
    Deduplicator d = Objects.requireNonNull(dedup);
    List<Settlement> settled;
    try {
      settled = committing(() -> d.commitAll(held));
    } catch (StoreUnavailableException e) {
      LOG.warn(
          "pipeline={} {} events delivered, but their commit failed ({}); their keys heal when"
              + " their leases run out, and a resend may be delivered again with the same"
              + " Idempotency-Key",
          id,
          held.size(),
          e.getMessage());
      return;
    } catch (IdemException e) {
      // Not expected (each was open and made by this deduplicator): settle them one by one.
      LOG.warn("pipeline={} batch commit failed ({}); committing one by one", id, e.getMessage());
      for (int i = 0; i < held.size(); i++) {
        if (held.get(i).settlement() == null) {
          commit(held.get(i), heldKeys.get(i), null);
        }
      }
      return;
    }
    for (int i = 0; i < settled.size(); i++) {
      if (settled.get(i) == Settlement.LEASE_LOST) {
        DedupKey key = heldKeys.get(i);
        if (!recommit(key, null)) {
          LOG.warn(
              "pipeline={} key={} delivered, but the lease had run out before the commit and"
                  + " another worker holds the key now; it may be delivered again (downstream sees"
                  + " the same Idempotency-Key)",
              id,
              key.toHex());
        }
      }
    }
  }

  /** The outcome of a decision other than acquired. */
  private Outcome notAcquired(DedupKey key, Decision decision) {
    if (decision instanceof Decision.Duplicate dup) {
      return new Outcome.Duplicate(key, dup.result());
    }
    if (decision instanceof Decision.InFlight f) {
      // The holder usually finishes in milliseconds; its lease only bounds a crashed holder. So a
      // sender is told to come back soon (then it gets the duplicate answer), at most in 10 s.
      long waitMs = Math.max(1_000, f.leaseUntilMillis() - time.wallMillis());
      return new Outcome.InFlight(key, Math.min(IN_FLIGHT_RETRY_AFTER_MAX, (waitMs + 999) / 1_000));
    }
    return new Outcome.Conflict(key);
  }

  private static Outcome.Rejected badInput(String code, @Nullable String message) {
    return new Outcome.Rejected(
        Outcome.Rejection.BAD_INPUT, code, message == null ? code : message);
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

  /** Runs the work of a reserved key with its lease renewed meanwhile, then settles. */
  private Outcome runReserved(InboundRequest event, DedupKey key, Reservation r) {
    if (leaseRanOut(r)) {
      return settle(r, key, Step.leaseExpired("before processing (the reserve was slow)", 0));
    }
    // Extends the lease every third of it while the work runs (one shared sweep, see
    // LeaseRenewals); a renewal that finds the lease lost stops, and the work then sees the lease
    // ran out at its next check and delivers nothing more.
    LeaseRenewals.Held held = held(r, key);
    try {
      return run(event, key, r);
    } finally {
      if (held != null) {
        held.close();
      }
    }
  }

  private LeaseRenewals.@Nullable Held held(Reservation r, DedupKey key) {
    LeaseRenewals set = leases;
    return set == null ? null : set.hold(r, key);
  }

  /** Renews one running reservation for the shared sweep; false when it must stop. */
  private boolean renewHeld(Reservation r, DedupKey key) {
    try {
      renew(r, key);
      return true;
    } catch (CancellationException e) {
      return false;
    }
  }

  private void renew(Reservation r, DedupKey key) {
    if (r.settlement() != null) {
      throw new CancellationException(); // settled meanwhile: stop this renewal
    }
    try {
      if (!r.extend()) {
        LOG.warn(
            "pipeline={} key={} lease could not be renewed (it ran out or was taken over)",
            id,
            key.toHex());
        throw new CancellationException();
      }
    } catch (StoreUnavailableException e) {
      // The next renewal tries again; until then the lease keeps running.
      LOG.debug("pipeline={} key={} lease renewal failed: {}", id, key.toHex(), e.getMessage());
    } catch (IdemException e) {
      throw new CancellationException(); // settled between the check and the extend
    }
  }

  /** Orders, transforms and delivers (or enqueues); returns the settled outcome. */
  private Outcome run(InboundRequest event, DedupKey key, @Nullable Reservation r) {
    OrderingStep.Turn turn = null;
    long sequence = SequenceGuard.NONE;
    PoisonKeys.State poisoned = null;
    try {
      SequenceGuard seq = sequences;
      if (seq != null) {
        try {
          sequence = seq.sequenceOf(event);
        } catch (KeyDerivationException e) {
          return settle(
              r,
              key,
              Step.release("its sequence is bad", badInput("invalid_sequence", e.getMessage())));
        }
      }
      if (ordering != null) {
        turn = ordering.enter(event);
        if (turn != null && seq != null) {
          long deadline = time.monotonicNanos() + seq.gapTimeout().toNanos();
          while (true) {
            long last = seq.last(turn.key());
            if (last != SequenceGuard.NONE && sequence <= last) {
              return stale(r, key, turn.key(), sequence, last);
            }
            if (last == SequenceGuard.NONE || sequence - 1 <= last) {
              break; // the key's first event, or the next one
            }
            if (time.monotonicNanos() - deadline >= 0) {
              gapReleased(key, turn.key(), sequence, last);
              break;
            }
            // Early: wait for the gap without the key's turn, so the events filling it can pass.
            String orderingKey = turn.key();
            turn.close();
            turn = null;
            seq.awaitGap(orderingKey, sequence, deadline);
            turn = ordering.enter(event);
            if (turn == null) {
              break;
            }
          }
        }
      }
      if (turn != null && poison != null) {
        poisoned = poison.state(turn.key());
        Outcome.Unavailable wait = poison.check(poisoned, key);
        if (wait != null) {
          return settle(r, key, Step.release("its ordering key is failing or blocked", wait));
        }
      }
      List<byte[]> outputs =
          transform == null ? List.of(event.body()) : transform.apply(event.body());
      String orderingKey = turn == null ? null : turn.key();
      if (outputs.isEmpty()) {
        return poisonAfter(
            turn, poisoned, sequenced(seq, turn, sequence, settle(r, key, Step.dropped())));
      }
      String fence = turn == null ? null : turn.fence();
      Map<String, String> headers =
          fence == null ? JSON_HEADERS : Map.of("Content-Type", "application/json", FENCE, fence);
      return poisonAfter(
          turn,
          poisoned,
          sequenced(
              seq,
              turn,
              sequence,
              settle(
                  r,
                  key,
                  async
                      ? enqueue(key, orderingKey, outputs)
                      : deliverNow(key, r, turn, outputs, headers, transform == null))));
    } catch (OrderingBusyException e) {
      LOG.warn("pipeline={} key={} not processed: {}", id, key.toHex(), e.getMessage());
      return settle(
          r,
          key,
          Step.release(
              "its ordering key is busy",
              new Outcome.Unavailable(
                  key,
                  "ordering_busy",
                  "an earlier event with this event's ordering key is still being processed;"
                      + " nothing was recorded for this one, retry later",
                  STORE_RETRY_AFTER_SECONDS)));
    } catch (TransformException e) {
      // The jq program and its error are the operator's business, not the sender's.
      LOG.warn("pipeline={} key={} transform failed: {}", id, key.toHex(), e.getMessage());
      return poisonAfter(
          turn,
          poisoned,
          settle(
              r,
              key,
              Step.release(
                  "the transform failed",
                  new Outcome.Failed(
                      key,
                      Outcome.Failure.TRANSFORM,
                      "transform_failed",
                      "the pipeline's transform failed on this event; nothing was delivered and the"
                          + " key was released, so a retry is processed again (the service's log says"
                          + " why)"))));
    } catch (StoreUnavailableException e) {
      return settle(r, key, Step.release("the store is unavailable", storeUnavailable(e, key)));
    } catch (RuntimeException e) {
      LOG.warn("pipeline={} key={} processing failed", id, key.toHex(), e);
      return settle(
          r,
          key,
          Step.release(
              "processing failed",
              new Outcome.Failed(
                  key,
                  Outcome.Failure.INTERNAL,
                  "internal_error",
                  "processing failed; the key was released, retry later")));
    } finally {
      if (turn != null) {
        turn.close();
      }
    }
  }

  /**
   * Sequence mode: after an event of an ordering key was processed (accepted: delivered, enqueued
   * or dropped by the transform), records its sequence as the key's last, still holding the turn.
   */
  private Outcome sequenced(
      @Nullable SequenceGuard seq, OrderingStep.@Nullable Turn turn, long sequence, Outcome o) {
    if (seq != null && turn != null && o instanceof Outcome.Accepted) {
      try {
        seq.record(turn.key(), sequence);
      } catch (StoreUnavailableException e) {
        LOG.warn(
            "pipeline={} ordering key={} processed sequence {} but could not record it ({}); a"
                + " resend of an older one may pass",
            id,
            turn.key(),
            sequence,
            e.getMessage());
      }
    }
    return o;
  }

  /**
   * Poison keys (sync): a failure of an ordered event counts an attempt against its ordering key; a
   * success of the event that was failing lets the key move on.
   */
  private Outcome poisonAfter(
      OrderingStep.@Nullable Turn turn, PoisonKeys.@Nullable State before, Outcome o) {
    PoisonKeys p = poison;
    if (p == null || turn == null) {
      return o;
    }
    try {
      if (o instanceof Outcome.Failed f && f.kind() != Outcome.Failure.INTERNAL) {
        return p.failed(turn.key(), before, f);
      }
      if (o instanceof Outcome.Accepted && before != null) {
        p.succeeded(turn.key());
      }
    } catch (StoreUnavailableException e) {
      LOG.warn(
          "pipeline={} ordering key={} could not record the event's attempt: {}",
          id,
          turn.key(),
          e.getMessage());
    }
    return o;
  }

  /** Sequence mode: drops a stale event, committing its key like a duplicate's. */
  private Outcome stale(
      @Nullable Reservation r, DedupKey key, String orderingKey, long sequence, long last) {
    if (meters != null) {
      meters.stale();
    }
    LogFields.decision(
        id,
        key.toHex(),
        "stale",
        () ->
            LOG.info(
                "pipeline={} key={} ordering key={} dropped as stale: sequence {} is not newer than"
                    + " the last processed {}",
                id,
                key.toHex(),
                orderingKey,
                sequence,
                last));
    return settle(r, key, new Step.Commit(null, new Outcome.Stale(key, sequence, last)));
  }

  private void gapReleased(DedupKey key, String orderingKey, long sequence, long last) {
    if (meters != null) {
      meters.gapReleased();
    }
    LOG.warn(
        "pipeline={} key={} ordering key={} sequence {} waited ordering.gap_timeout for {} to"
            + " {}; processing it without them",
        id,
        key.toHex(),
        orderingKey,
        sequence,
        last + 1,
        sequence - 1);
  }

  /**
   * Delivers every output now; says how to settle. {@code checkedJson}: the outputs are the event's
   * body as the body check accepted it (no transform).
   */
  private Step deliverNow(
      DedupKey key,
      @Nullable Reservation r,
      OrderingStep.@Nullable Turn turn,
      List<byte[]> outputs,
      Map<String, String> headers,
      boolean checkedJson) {
    if (leaseRanOut(r)) {
      return Step.leaseExpired("before delivery", 0);
    }
    if (turn != null && turn.lockLost(time.wallMillis())) {
      return Step.release("its ordering lock ran out", orderingLockLost(key, "before delivery"));
    }
    String orderingKey = turn == null ? null : turn.key();
    if (outputs.size() == 1) {
      // Without a transform the output is the event's own body, which the body check accepted.
      DeliveryOutcome outcome =
          deliverer.deliver(
              new Delivery(
                  id, idempotencyKey(key), orderingKey, outputs.get(0), headers, checkedJson));
      if (outcome instanceof DeliveryOutcome.Failed f) {
        return Step.release("delivery failed", deliveryFailed(key, f));
      }
      Outcome.Reply reply = replay ? replyOf((DeliveryOutcome.Delivered) outcome) : null;
      return new Step.Commit(
          replay ? StoredAnswer.encode(reply) : null, new Outcome.Accepted(key, reply, false));
    }
    for (int i = 0; i < outputs.size(); i++) {
      if (i > 0 && turn != null && turn.lockLost(time.wallMillis())) {
        return new Step.FanOutStopped(
            outputs.size(), i, orderingLockLost(key, "before delivering output " + i));
      }
      if (i > 0 && leaseRanOut(r)) {
        // The outputs delivered so far carry their own Idempotency-Keys; a resend repeats them.
        return new Step.FanOutStopped(
            outputs.size(), i, leaseExpiredOutcome(key, "before delivering output " + i, i));
      }
      DeliveryOutcome outcome =
          deliverer.deliver(
              new Delivery(
                  id, idempotencyKey(key) + ":" + i, orderingKey, outputs.get(i), headers));
      if (outcome instanceof DeliveryOutcome.Failed f) {
        return new Step.FanOutStopped(outputs.size(), i, deliveryFailed(key, f));
      }
    }
    return new Step.FanOutStopped(
        outputs.size(), outputs.size(), new Outcome.Accepted(key, null, false));
  }

  /**
   * The step when this instance's shared ordering lock ran out before delivery (it was paused or
   * starved past {@code lock_ttl}): another instance may be delivering the key's events now, so
   * this one delivers nothing more, releases the key (a fan-out keeps what it delivered) and
   * answers unavailable; the sender's retry takes its place in the key's order again.
   */
  private Outcome orderingLockLost(DedupKey key, String when) {
    LOG.warn(
        "pipeline={} key={} not delivered: its ordering lock ran out {}", id, key.toHex(), when);
    return new Outcome.Unavailable(
        key,
        "ordering_busy",
        "this instance lost the event's ordering-key lock before delivering it; nothing was"
            + " recorded for this event, retry later",
        STORE_RETRY_AFTER_SECONDS);
  }

  private static Outcome.@Nullable Reply replyOf(DeliveryOutcome.Delivered d) {
    byte[] body = d.responseBody();
    if (d.status() >= 200 && d.status() < 300 && body != null) {
      return new Outcome.Reply(d.status(), d.contentType(), body);
    }
    return null;
  }

  /**
   * Encodes every output as an outbox message with the event's ordering key, so that the store
   * hands out one entry per ordering key at a time, oldest first (order on every instance, across
   * restarts); says how to settle (commit and enqueue).
   */
  private Step enqueue(DedupKey key, @Nullable String orderingKey, List<byte[]> outputs) {
    Function<Delivery, byte[]> encoder = Objects.requireNonNull(outboxEncoder);
    String idempotencyKey = idempotencyKey(key);
    // The ordering key is a digest (64 hex digits); anything else the store cannot keep is left
    // to the dispatcher's in-process lanes.
    String storeKey =
        orderingKey != null
                && !orderingKey.isEmpty()
                && orderingKey.length() <= OutboxMessage.MAX_ORDERING_KEY_LENGTH
            ? orderingKey
            : null;
    List<OutboxMessage> messages = new ArrayList<>(outputs.size());
    for (int i = 0; i < outputs.size(); i++) {
      // Fan-out children get their own Idempotency-Key, as in sync mode.
      String childKey = outputs.size() == 1 ? idempotencyKey : idempotencyKey + ":" + i;
      Delivery delivery = new Delivery(id, childKey, orderingKey, outputs.get(i), JSON_HEADERS);
      messages.add(new OutboxMessage(id, key, encoder.apply(delivery), storeKey));
    }
    return new Step.Enqueue(messages);
  }

  /** How the work ended, and so how its reservation is settled. */
  private sealed interface Step {
    /** Commit (with the stored result), answering the outcome. */
    record Commit(byte @Nullable [] result, Outcome outcome) implements Step {}

    /** Commit and write the outbox entries in one atomic step. */
    record Enqueue(List<OutboxMessage> messages) implements Step {}

    /** Release, answering the outcome. */
    record Release(String why, @Nullable Outcome outcome) implements Step {}

    /**
     * A fan-out in sync mode: the first {@code delivered} of {@code total} outputs were delivered;
     * if fewer than all, the next one failed (or was not tried) and the key is released.
     */
    record FanOutStopped(int total, int delivered, Outcome outcome) implements Step {}

    /** Release because the lease ran out. */
    record LeaseExpired(String when, int delivered) implements Step {}

    static Step release(String why, @Nullable Outcome outcome) {
      return new Release(why, outcome);
    }

    static Step dropped() {
      return new Release("the transform dropped it", null);
    }

    static Step leaseExpired(String when, int delivered) {
      return new LeaseExpired(when, delivered);
    }
  }

  /**
   * Settles the reservation as the work ended and returns the outcome: the one place where a
   * pipeline commits, releases or settles fan-out children.
   */
  private Outcome settle(@Nullable Reservation r, DedupKey key, Step step) {
    if (step instanceof Step.Commit c) {
      Batch b = c.result() == null ? BATCH.get() : null;
      DeferredCommit later = c.result() == null && b == null ? DEFERRED.get() : null;
      if (b != null && b.hold(r, key)) {
        return c.outcome(); // held back: committed with its batch by settleAll, before processAll
      }
      if (later == null || !later.hold(this, r, key)) {
        commit(r, key, c.result());
      } // else left to processAsync's caller, which commits it without waiting for the sync
      return c.outcome();
    }
    if (step instanceof Step.Enqueue e) {
      Reservation held = Objects.requireNonNull(r);
      // The key's commit and every message are written together: accepted whole or not at all.
      if (leaseRanOut(held)) {
        return settle(held, key, Step.leaseExpired("before the accept was written", 0));
      }
      if (held.commitAndEnqueue(e.messages()) == Settlement.LEASE_LOST) {
        LOG.warn(
            "pipeline={} key={} lease ran out before the accept was written; nothing was"
                + " enqueued",
            id,
            key.toHex());
        return new Outcome.Unavailable(
            key,
            "lease_expired",
            "processing took longer than dedup.lease and the key was taken over; nothing was"
                + " recorded for this request, retry later",
            STORE_RETRY_AFTER_SECONDS);
      }
      onEnqueued.run();
      return new Outcome.Accepted(key, null, false);
    }
    if (step instanceof Step.Release rel) {
      release(r, key, rel.why());
      return rel.outcome() == null ? new Outcome.Accepted(key, null, true) : rel.outcome();
    }
    if (step instanceof Step.FanOutStopped f) {
      settleFanOut(r, key, f);
      return f.outcome();
    }
    Step.LeaseExpired l = (Step.LeaseExpired) step;
    release(r, key, "its lease ran out " + l.when());
    return leaseExpiredOutcome(key, l.when(), l.delivered());
  }

  private void settleFanOut(@Nullable Reservation r, DedupKey key, Step.FanOutStopped f) {
    if (r == null) {
      return;
    }
    try {
      FanOut fan = r.fanOut(f.total());
      for (int i = 0; i < f.delivered(); i++) {
        fan.child().succeeded();
      }
      if (f.delivered() < f.total()) {
        fan.child().failed();
      }
    } catch (IdemException e) {
      // Delivered or not, the outcome stands; an unsettled key heals when its lease runs out.
      LOG.warn("pipeline={} key={} fan-out settlement failed: {}", id, key.toHex(), e.getMessage());
    }
  }

  /**
   * Whether the reservation's lease has run out: then another worker may hold the key, and what
   * this one delivers may be delivered again, so it must not deliver.
   */
  private boolean leaseRanOut(@Nullable Reservation r) {
    return r != null && time.wallMillis() >= r.leaseUntil().toEpochMilli();
  }

  /**
   * The outcome when the lease ran out before the work was done.
   *
   * @param delivered how many fan-out outputs were delivered before the lease ran out
   */
  private Outcome leaseExpiredOutcome(DedupKey key, String when, int delivered) {
    LOG.warn(
        "pipeline={} key={} lease ran out {}; {} delivered, answered unavailable",
        id,
        key.toHex(),
        when,
        delivered == 0 ? "nothing" : delivered + " outputs");
    return new Outcome.Unavailable(
        key,
        "lease_expired",
        "processing took longer than dedup.lease (a slow store or ordering wait); "
            + (delivered == 0
                ? "nothing was delivered for this request"
                : "only the first "
                    + delivered
                    + " outputs were delivered (a resend repeats them with the same"
                    + " Idempotency-Keys)")
            + ", retry later",
        STORE_RETRY_AFTER_SECONDS);
  }

  /**
   * The sender learns only that delivery failed; the downstream's address, status and answer go to
   * the log (each attempt was logged by the deliverer, this line says what the sender was told).
   */
  private Outcome deliveryFailed(DedupKey key, DeliveryOutcome.Failed f) {
    LOG.warn(
        "pipeline={} key={} delivery failed, answered delivery_failed and released the key: {}",
        id,
        key.toHex(),
        f.error());
    return new Outcome.Failed(
        key,
        Outcome.Failure.DELIVERY,
        "delivery_failed",
        "the event could not be delivered downstream; nothing was recorded for it, so a retry of"
            + " this request is accepted");
  }

  private void commit(@Nullable Reservation r, DedupKey key, byte @Nullable [] result) {
    if (r == null) {
      return;
    }
    try {
      if (committing(() -> r.commit(result)) == Settlement.LEASE_LOST && !recommit(key, result)) {
        LOG.warn(
            "pipeline={} key={} delivered, but the lease had run out before the commit and"
                + " another worker holds the key now; it may be delivered again (downstream sees"
                + " the same Idempotency-Key)",
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

  /**
   * Runs a commit of delivered work, and again after a short pause while the store is unavailable:
   * at most {@link #COMMIT_ATTEMPTS} times, and no retry starts {@link #COMMIT_RETRY_BUDGET_NANOS}
   * after the first failure. A commit whose answer was lost (a command timeout after a pause of
   * this JVM or a store stall, a dropped connection) would otherwise leave the key in flight until
   * its lease runs out, and a resend then be delivered again. Retrying is safe: a commit repeated
   * with the token that committed is applied without change, and one whose lease ran out meanwhile
   * answers {@code LEASE_LOST} (then {@link #recommit} decides).
   *
   * @throws StoreUnavailableException the last failure, when every attempt failed
   */
  private <T> T committing(Supplier<T> commit) {
    long firstFailure = 0;
    for (int attempt = 1; ; attempt++) {
      try {
        return commit.get();
      } catch (StoreUnavailableException e) {
        long now = time.monotonicNanos();
        if (attempt == 1) {
          firstFailure = now;
        }
        if (attempt >= COMMIT_ATTEMPTS || now - firstFailure >= COMMIT_RETRY_BUDGET_NANOS) {
          throw e;
        }
        LOG.info(
            "pipeline={} commit failed ({}); committing again (attempt {} of {})",
            id,
            e.getMessage(),
            attempt + 1,
            COMMIT_ATTEMPTS);
        try {
          sleeper.sleep(Duration.ofMillis(COMMIT_RETRY_PAUSE_MILLIS * attempt));
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
  }

  /**
   * Records a delivered event whose lease ran out before its commit (the instance was paused, or
   * the store slow): if nobody took the key meanwhile, reserves and commits it again, so a resend
   * is answered as a duplicate instead of being delivered again.
   *
   * @return true if the key is now committed (by this or an earlier commit)
   */
  private boolean recommit(DedupKey key, byte @Nullable [] result) {
    Deduplicator d = dedup;
    if (d == null || fingerprints != null) {
      return false; // replay mode would need the fingerprint; the key heals by its lease
    }
    Decision again = d.reserve(key);
    if (again instanceof Decision.Acquired a) {
      boolean committed = a.reservation().commit(result) == Settlement.COMMITTED;
      if (committed) {
        LOG.info(
            "pipeline={} key={} delivered after its lease ran out; committed it again",
            id,
            key.toHex());
      }
      return committed;
    }
    return again instanceof Decision.Duplicate;
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

  private Outcome.Unavailable storeUnavailable(StoreUnavailableException e, DedupKey key) {
    if (meters != null) {
      meters.storeUnavailable();
    }
    LogFields.decision(
        id,
        key.toHex(),
        "store_unavailable",
        () ->
            LOG.warn("pipeline={} key={} store unavailable: {}", id, key.toHex(), e.getMessage()));
    return new Outcome.Unavailable(
        key,
        "store_unavailable",
        "the dedup store is unavailable; nothing was committed, retry later",
        STORE_RETRY_AFTER_SECONDS);
  }

  /**
   * A batch's event when the store is unavailable: logged at DEBUG, because the source logs the
   * outage once (not once per event).
   */
  private Outcome.Unavailable storeUnavailableInBatch(StoreUnavailableException e, DedupKey key) {
    if (meters != null) {
      meters.storeUnavailable();
    }
    if (LOG.isDebugEnabled()) {
      LogFields.decision(
          id,
          key.toHex(),
          "store_unavailable",
          () ->
              LOG.debug(
                  "pipeline={} key={} store unavailable: {}", id, key.toHex(), e.getMessage()));
    }
    // No sender sees this message, only the source's log: it may say why.
    return new Outcome.Unavailable(
        key,
        "store_unavailable",
        "the dedup store is unavailable ("
            + e.getMessage()
            + "); nothing was committed, retry later",
        STORE_RETRY_AFTER_SECONDS);
  }

  /** Assembles a {@link Pipeline}. Not thread-safe. */
  public static final class Builder {
    private final PipelineSettings settings;
    private @Nullable EventKeys keys;
    private @Nullable Deduplicator dedup;
    private @Nullable OutboxStore outbox;
    private @Nullable Function<byte[], Fingerprint> fingerprints;
    private boolean canonicalFingerprints;
    private @Nullable OrderingStep ordering;
    private @Nullable SequenceGuard sequences;
    private @Nullable PoisonKeys poison;
    private @Nullable Transform transform;
    private @Nullable Deliverer deliverer;
    private @Nullable Function<Delivery, byte[]> outboxEncoder;
    private Runnable onEnqueued = () -> {};
    private IdemMetrics.@Nullable PipelineMeters meters;
    private TimeSource time = TimeSource.system();
    private Sleeper sleeper = Sleeper.SYSTEM;
    private @Nullable ScheduledExecutorService renewals;
    private boolean batchCommits;
    private final int maxDepth;
    private final long maxBody;

    private Builder(PipelineSettings settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
      this.maxDepth = settings.source().maxDepth();
      this.maxBody = settings.source().maxBody();
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
      this.canonicalFingerprints = false;
      return this;
    }

    /**
     * Fingerprints payloads by their canonical form ({@link CanonicalJson#fingerprint}), taken from
     * the pipeline's one read of the body rather than from a second pass over it.
     *
     * @return this builder
     */
    public Builder canonicalFingerprints() {
      this.fingerprints = CanonicalJson::fingerprint;
      this.canonicalFingerprints = true;
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
     * Sets sequence mode ({@code ordering.sequence}): stale events dropped, early ones held.
     *
     * @param sequences the guard, or null for none; needs an ordering step
     * @return this builder
     */
    public Builder sequences(@Nullable SequenceGuard sequences) {
      this.sequences = sequences;
      return this;
    }

    /**
     * Sets poison-key handling (sync delivery with an ordering key).
     *
     * @param poison the guard, or null for none; needs an ordering step
     * @return this builder
     */
    public Builder poison(@Nullable PoisonKeys poison) {
      this.poison = poison;
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
     * Sets how the pipeline waits between attempts of a commit the store did not answer (see {@code
     * COMMIT_ATTEMPTS}); tests pass one that does not sleep.
     *
     * @param sleeper the sleeper; {@link Sleeper#SYSTEM} by default
     * @return this builder
     */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /**
     * Sets the timer that renews a reservation's lease while its work runs (every third of the
     * lease); without one, the lease alone bounds the work.
     *
     * @param renewals a shared scheduler, or null for no renewal
     * @return this builder
     */
    public Builder renewals(@Nullable ScheduledExecutorService renewals) {
      this.renewals = renewals;
      return this;
    }

    /**
     * Sets whether {@link Pipeline#processAll} commits a batch's keys with one batched store call
     * after the batch's last delivery (sync delivery without an ordering step), instead of each key
     * right after its own delivery. For a store across the network (Redis, JDBC) that saves one
     * round trip per event; the price is a wider window at a kill: the events of the batch that
     * were delivered but not yet committed are delivered again (with the same {@code
     * Idempotency-Key}) once their leases run out, at most one batch per consumer per kill instead
     * of at most one event. Nothing is acknowledged before its key is committed either way. Off by
     * default.
     *
     * @param batchCommits true to commit each batch with one call
     * @return this builder
     */
    public Builder batchCommits(boolean batchCommits) {
      this.batchCommits = batchCommits;
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
