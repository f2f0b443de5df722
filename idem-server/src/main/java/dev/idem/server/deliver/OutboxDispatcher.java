package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.logging.LogFields;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers one outbox queue (one pipeline's, in {@code async} mode) in the background: claims
 * entries in append order, delivers each with the {@link Sink}, acknowledges it on success,
 * reschedules it with backoff on a retryable failure, and moves it to the dead letters after the
 * last retry or at once on a non-retryable failure. A key is committed before its entry is written
 * (atomically, by {@link OutboxStore#commitAndEnqueue}), so nothing here marks or unmarks keys.
 *
 * <p><b>Guarantees.</b>
 *
 * <ul>
 *   <li>At least once: an entry leaves the outbox only when acknowledged (delivered) or dead
 *       lettered. An entry whose deliverer died comes back when its claim runs out ({@code
 *       claimTimeout}); downstream deduplicates with the {@code Idempotency-Key}.
 *   <li>Per ordering key, one at a time, in append order: entries whose delivery has the same
 *       non-null {@link Delivery#orderingKey()} are delivered one after another, never
 *       concurrently, in the order they were appended. When one fails and waits for its retry, the
 *       key is <em>blocked</em>: later entries of that key are not delivered before it (they are
 *       handed back to the outbox, due when the failed entry is, and behind it in append order). A
 *       dead-lettered entry unblocks its key: the later ones go on.
 *   <li>Poison keys ({@link Builder#blockOnFailure}): with {@code ordering.on_failure: block}, an
 *       ordered entry that fails for good is not dead lettered but parked as its key's head, so the
 *       store keeps the key blocked on every instance and across restarts while other keys go on,
 *       until an operator skips it (it becomes a dead letter, the key moves on) or retries it (its
 *       attempts start again); see {@link BlockedKeys}.
 *   <li>Bounded: at most {@code concurrency} deliveries run at once (entries without an ordering
 *       key, and different keys, run in parallel), and at most {@code maxInFlight} claimed entries
 *       wait in memory.
 * </ul>
 *
 * <p><b>Attempts.</b> The store counts claims ({@link OutboxRecord#attempts()}); an entry handed
 * back because its key was blocked was claimed without being tried, and the dispatcher subtracts
 * those claims when it numbers attempts. That correction lives in memory: after a restart, an entry
 * that waited behind a failing one may have that many fewer retries left.
 *
 * <p><b>Restarts and several instances.</b> When the entries carry their ordering key in the store
 * ({@link dev.idem.spi.OutboxMessage#orderingKey()}), the store hands out one entry per key at a
 * time, oldest first, to every dispatcher of the queue, in this process or another, across
 * restarts; the lanes here then only ever hold one entry of a key. Entries enqueued without it are
 * ordered by the lanes alone: within one process a later entry never overtakes an earlier one of
 * its key, but across a restart or between two instances it may (see docs/delivery.md).
 *
 * <p><b>Fencing.</b> Acknowledge, reschedule and dead letter go through the store's fenced forms:
 * if this dispatcher's claim ran out and another claim took the entry over, its late answer changes
 * nothing (logged at INFO).
 *
 * <p><b>Waking.</b> The dispatcher claims as soon as {@link #wakeUp()} is called (call it after
 * each {@code commitAndEnqueue}; it is cheap and coalesces), when a retry it scheduled becomes due
 * (so backoffs shorter than the poll interval take effect), and otherwise every {@code
 * pollInterval}, which also picks up entries left by a previous run or another instance.
 *
 * <p><b>Start.</b> Before its first claim, the dispatcher asks the store to release the claims of
 * an earlier run ({@link OutboxStore#releaseClaimsOfEarlierRuns}): on an embedded store, what a
 * killed process had claimed is delivered at once after the restart; on a shared store, those
 * entries come back when their claims run out ({@code claimTimeout}).
 *
 * <p><b>Logs.</b> Every failed attempt is logged at WARN with the pipeline, the idempotency key,
 * attempt n of m, the error and when the next attempt is due (or that it was dead lettered); the
 * error is also kept with the entry ({@link OutboxStore#pending}).
 *
 * <p><b>Listener.</b> {@code onDelivered} gets the attempt number and the latency from the entry's
 * append to its delivery (wall clock), {@code onRetry} each failed attempt that will be retried,
 * and {@code onGaveUp} (with {@code deadLettered = true}) each dead letter.
 *
 * <p>Thread-safe. {@link #close()} stops claiming, waits up to {@code closeTimeout} for deliveries
 * in progress, and hands claimed entries that were not started back to the outbox.
 */
public final class OutboxDispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);
  private static final long NO_BLOCKER = -1;
  private static final long SETTLED = -1;
  private static final int MAX_TRACKED_UNUSED_CLAIMS = 100_000;
  private static final long SWEEP_INTERVAL_MILLIS = 1_000;
  private static final int MAX_TRACKED_RETRIES = 10_000;

  private final String queue;
  private final OutboxStore outbox;
  private final Sink sink;
  private final RetryPolicy retry;
  private final DeliveryListener listener;
  private final TimeSource time;
  private final DoubleSupplier jitter;
  private final Function<byte[], Delivery> decoder;
  private final int batchSize;
  private final int maxInFlight;
  private final boolean blockOnFailure;
  private final long claimMillis;
  private final long pollNanos;
  private final Duration closeTimeout;

  private final ReentrantLock lock = new ReentrantLock();
  // All guarded by lock.
  private final Map<String, Lane> lanes = new HashMap<>();
  private final Map<Long, Entry> held = new HashMap<>();
  private final Map<Long, Integer> unusedClaims = new HashMap<>();
  private boolean starved;
  private long lastSweepMillis;

  private final ThreadPoolExecutor workers;
  private final Thread loop;
  private final AtomicBoolean wakeRequested = new AtomicBoolean();

  /** When retries this dispatcher scheduled become due (wall clock), earliest first. */
  private final PriorityBlockingQueue<Long> retriesDue = new PriorityBlockingQueue<>();

  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean running = true;
  private volatile boolean closing;

  private OutboxDispatcher(Builder b) {
    this.queue = b.queue;
    this.outbox = b.outbox;
    this.sink = b.sink;
    this.retry = b.retry;
    this.listener = b.listener;
    this.time = b.time;
    this.jitter = b.jitter;
    this.decoder = b.decoder;
    this.batchSize = b.batchSize;
    this.maxInFlight = b.maxInFlight;
    this.blockOnFailure = b.blockOnFailure;
    this.claimMillis = b.claimTimeout.toMillis();
    this.pollNanos = b.pollInterval.toNanos();
    this.closeTimeout = b.closeTimeout;
    AtomicInteger n = new AtomicInteger();
    this.workers =
        new ThreadPoolExecutor(
            b.concurrency,
            b.concurrency,
            0,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "idem-outbox-" + queue + "-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.loop = new Thread(this::run, "idem-outbox-" + queue);
    this.loop.setDaemon(true);
  }

  /**
   * Starts a builder.
   *
   * @param queue the outbox queue, normally the pipeline id
   * @param outbox the store's outbox
   * @param sink where to deliver
   * @return a builder with the defaults
   */
  public static Builder builder(String queue, OutboxStore outbox, Sink sink) {
    return new Builder(queue, outbox, sink);
  }

  /**
   * Asks the dispatcher to claim now, e.g. right after an entry was enqueued. Cheap and
   * non-blocking; calls made while a claim is pending coalesce.
   */
  public void wakeUp() {
    if (wakeRequested.compareAndSet(false, true)) {
      LockSupport.unpark(loop);
    }
  }

  /**
   * Returns the queue this dispatcher delivers.
   *
   * @return the queue
   */
  public String queue() {
    return queue;
  }

  /**
   * Returns how many ordering keys are blocked behind an entry waiting for its retry.
   *
   * @return the number of blocked keys
   */
  public int blockedKeys() {
    lock.lock();
    try {
      int n = 0;
      for (Lane lane : lanes.values()) {
        if (lane.isBlocked()) {
          n++;
        }
      }
      return n;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns how many claimed entries are held in memory: being delivered or waiting for their turn.
   *
   * @return the number of entries
   */
  public int inFlight() {
    lock.lock();
    try {
      return held.size();
    } finally {
      lock.unlock();
    }
  }

  private void start() {
    loop.start();
  }

  // ---------------------------------------------------------------- the claim loop

  private void run() {
    releaseEarlierClaims();
    boolean failing = false;
    while (running) {
      int room;
      lock.lock();
      try {
        room = maxInFlight - held.size();
        starved = room <= 0;
      } finally {
        lock.unlock();
      }
      boolean more = false;
      if (room > 0) {
        int max = Math.min(batchSize, room);
        try {
          List<OutboxRecord> batch = outbox.claim(queue, max, time.wallMillis(), claimMillis);
          if (failing) {
            LOG.info("outbox of queue {} answers again", queue);
            failing = false;
          }
          admit(batch);
          more = batch.size() >= max;
        } catch (RuntimeException e) {
          if (!failing) {
            LOG.warn(
                "claiming from the outbox of queue {} failed; trying again every {}ms: {}",
                queue,
                pollNanos / 1_000_000,
                e.toString());
          }
          failing = true;
        }
      }
      sweepBlockedLanes();
      if (!more && running) {
        long wait = nanosUntilNextClaim();
        if (wait > 0 && !wakeRequested.getAndSet(false)) {
          LockSupport.parkNanos(this, wait);
          // Any wake-up requested until here is served by the claim that follows.
          wakeRequested.set(false);
        }
      }
    }
  }

  /** Releases what an earlier run claimed; a failure only delays those entries. */
  private void releaseEarlierClaims() {
    try {
      long released = outbox.releaseClaimsOfEarlierRuns(queue);
      if (released > 0) {
        LOG.info(
            "outbox queue {}: {} entries claimed by an earlier run are due again", queue, released);
      }
    } catch (RuntimeException e) {
      LOG.warn(
          "outbox queue {}: the claims of an earlier run could not be released; they come back"
              + " after the claim timeout: {}",
          queue,
          e.toString());
    }
  }

  /** How long to wait for the next claim: the poll interval, or less if a retry is due sooner. */
  private long nanosUntilNextClaim() {
    long now = time.wallMillis();
    boolean became = false;
    Long due;
    while ((due = retriesDue.peek()) != null && due <= now) {
      retriesDue.poll();
      became = true;
    }
    if (became) {
      return 0; // a retry is due: claim again at once
    }
    return due == null ? pollNanos : Math.min(pollNanos, TimeUnit.MILLISECONDS.toNanos(due - now));
  }

  /** Remembers when a retry is due, and makes the claim loop wait no longer than that. */
  private void retryDueAt(long dueMillis) {
    if (dueMillis - time.wallMillis() >= pollNanos / 1_000_000
        || retriesDue.size() >= MAX_TRACKED_RETRIES) {
      return; // the regular poll picks it up in time (or, past the bound, soon after)
    }
    retriesDue.add(dueMillis);
    LockSupport.unpark(loop);
  }

  /** Sorts claimed entries: unordered ones straight to the workers, keyed ones into their lane. */
  private void admit(List<OutboxRecord> batch) {
    if (batch.isEmpty()) {
      return;
    }
    List<Runnable> tasks = new ArrayList<>();
    List<Parked> parks = new ArrayList<>(0);
    long now = time.wallMillis();
    for (OutboxRecord record : batch) {
      Delivery delivery;
      try {
        delivery = decoder.apply(record.payload());
      } catch (RuntimeException e) {
        deadLetterUndecodable(record, e, now);
        continue;
      }
      lock.lock();
      try {
        Entry existing = held.get(record.id());
        if (existing != null && !existing.answered) {
          // Its claim ran out while it waited here; keep the one copy, with the newer count.
          existing.record = record;
          countUnusedClaim(record.id());
          continue;
        }
        Entry entry = new Entry(record, delivery);
        String key = delivery.orderingKey();
        if (key == null) {
          held.put(record.id(), entry);
          tasks.add(() -> runSingle(entry));
          continue;
        }
        Lane lane = lanes.computeIfAbsent(key, k -> new Lane());
        if (lane.isBlocked()) {
          if (lane.blockerId == record.id() || now >= lane.blockedUntil + claimMillis) {
            // The failed entry is back for its retry (or, past its claim time, is someone
            // else's now): the key may move again, starting with this entry.
            lane.unblock();
          } else {
            parks.add(new Parked(record.id(), lane.blockedUntil, lane.blockerId));
            countUnusedClaim(record.id());
            continue;
          }
        }
        held.put(record.id(), entry);
        lane.pending.addLast(entry);
        if (!lane.scheduled) {
          lane.scheduled = true;
          tasks.add(() -> runLane(key, lane));
        }
      } finally {
        lock.unlock();
      }
    }
    for (Parked p : parks) {
      park(p.id, p.until, p.blockerId);
    }
    for (Runnable task : tasks) {
      submit(task);
    }
  }

  private void submit(Runnable task) {
    try {
      workers.execute(task);
    } catch (RejectedExecutionException e) {
      // Closing: the entry stays claimed and comes back after its claim timeout.
      LOG.debug("outbox queue {}: a delivery was not started because the dispatcher closed", queue);
    }
  }

  // ---------------------------------------------------------------- the workers

  private void runSingle(Entry entry) {
    if (closing) {
      return; // close() hands it back
    }
    entry.started = true;
    deliverAndSettle(entry);
    lock.lock();
    try {
      release(entry);
    } finally {
      lock.unlock();
    }
  }

  /** Delivers the lane's next entry, then schedules itself again if more wait (round robin). */
  private void runLane(String key, Lane lane) {
    Entry entry;
    lock.lock();
    try {
      entry = closing ? null : lane.pending.pollFirst();
      if (entry == null) {
        lane.scheduled = false;
        if (!closing && !lane.isBlocked()) {
          lanes.remove(key, lane);
        }
        return;
      }
      entry.started = true;
    } finally {
      lock.unlock();
    }

    long retryAt = deliverAndSettle(entry);

    List<Entry> toPark = List.of();
    boolean again;
    lock.lock();
    try {
      release(entry);
      if (retryAt != SETTLED) {
        lane.blockerId = entry.record.id();
        lane.blockedUntil = retryAt;
        if (!lane.pending.isEmpty()) {
          toPark = new ArrayList<>(lane.pending);
          lane.pending.clear();
          for (Entry e : toPark) {
            held.remove(e.record.id());
            countUnusedClaim(e.record.id());
          }
        }
      }
      again = !lane.pending.isEmpty();
      if (!again) {
        lane.scheduled = false;
        if (!lane.isBlocked()) {
          lanes.remove(key, lane);
        }
      }
    } finally {
      lock.unlock();
    }
    for (Entry e : toPark) {
      park(e.record.id(), retryAt, entry.record.id());
    }
    if (again) {
      submit(() -> runLane(key, lane));
    }
  }

  /**
   * Makes one attempt and settles the entry in the outbox.
   *
   * @return {@link #SETTLED} if acknowledged or dead lettered, else when the retry is due
   */
  private long deliverAndSettle(Entry entry) {
    Delivery delivery = entry.delivery;
    DeliveryOutcome outcome;
    try {
      outcome = sink.deliver(delivery);
    } catch (RuntimeException e) {
      LOG.warn("sink {} threw instead of returning a failure", sink.describe(), e);
      outcome = new DeliveryOutcome.Failed("sink " + sink.describe() + " threw " + e, true);
    }
    long now = time.wallMillis();
    OutboxRecord record;
    int attempt;
    lock.lock();
    try {
      record = entry.record;
      attempt =
          Math.max(
              1,
              record.attempts()
                  - unusedClaims.getOrDefault(record.id(), 0)
                  - BlockedKeys.attemptsFrom(record.lastError()));
    } finally {
      lock.unlock();
    }
    long id = record.id();
    // From here a new claim of this entry (its retry fell due before this worker released it) is
    // a new delivery, not a copy of this one: admit takes it, and this settle is fenced off if the
    // new claim came first.
    entry.answered = true;

    if (outcome instanceof DeliveryOutcome.Delivered) {
      try {
        if (!outbox.acknowledge(record)) {
          tookOver(id, "delivered");
        }
      } catch (RuntimeException e) {
        LOG.warn(
            "outbox queue {}: entry {} was delivered but could not be acknowledged; it will be"
                + " delivered again after its claim runs out: {}",
            queue,
            id,
            e.toString());
      }
      forgetUnusedClaims(id);
      Listeners.delivered(
          listener,
          delivery.pipeline(),
          attempt,
          Duration.ofMillis(Math.max(0, now - record.enqueuedAtMillis())));
      return SETTLED;
    }

    DeliveryOutcome.Failed failed = (DeliveryOutcome.Failed) outcome;
    boolean forGood = !failed.retryable() || attempt >= retry.maxAttempts();
    if (forGood && blockOnFailure && delivery.orderingKey() != null) {
      block(record, delivery, attempt, failed, now);
      return SETTLED; // the store holds the key (the entry stays its head); the lane moves on
    }
    if (forGood) {
      String reason =
          (failed.retryable()
                  ? "gave up after " + attempt + (attempt == 1 ? " attempt: " : " attempts: ")
                  : "not retryable: ")
              + failed.error();
      AttemptLog.failed(
          LOG,
          delivery,
          attempt,
          retry.maxAttempts(),
          failed.error(),
          null,
          failed.retryable() ? "dead letter: no retries left" : "dead letter: not retryable");
      try {
        if (!outbox.deadLetter(record, reason, now)) {
          tookOver(id, "failed for good");
        }
        LogFields.delivery(
            queue,
            id,
            record.key().toHex(),
            () ->
                LOG.warn(
                    "outbox queue {}: entry {} moved to the dead letters: {}", queue, id, reason));
      } catch (RuntimeException e) {
        LOG.warn(
            "outbox queue {}: entry {} failed for good but could not be dead lettered; it will"
                + " be tried again after its claim runs out: {}",
            queue,
            id,
            e.toString());
      }
      forgetUnusedClaims(id);
      Listeners.gaveUp(listener, delivery.pipeline(), attempt, failed.error(), true);
      return SETTLED;
    }

    long retryAt =
        now + retry.backoff(attempt, jitter.getAsDouble(), failed.retryAfter()).toMillis();
    try {
      String error =
          BlockedKeys.attemptsFromError(
              BlockedKeys.attemptsFrom(record.lastError()), failed.error());
      if (!outbox.reschedule(record, retryAt, error)) {
        tookOver(id, "failed");
      }
    } catch (RuntimeException e) {
      LOG.warn(
          "outbox queue {}: entry {} could not be rescheduled; it comes back after its claim runs"
              + " out: {}",
          queue,
          id,
          e.toString());
      retryAt = now + claimMillis;
    }
    AttemptLog.failed(
        LOG,
        delivery,
        attempt,
        retry.maxAttempts(),
        failed.error(),
        Instant.ofEpochMilli(retryAt),
        "");
    Listeners.retry(listener, delivery.pipeline(), attempt, failed.error());
    retryDueAt(retryAt);
    return retryAt;
  }

  /**
   * Blocks an ordered entry that failed for good ({@code ordering.on_failure: block}): parks it as
   * its key's head until an operator skips or retries it (see {@link BlockedKeys}).
   */
  private void block(
      OutboxRecord record,
      Delivery delivery,
      int attempt,
      DeliveryOutcome.Failed failed,
      long now) {
    long id = record.id();
    String why = failed.retryable() ? "no retries left" : "not retryable";
    AttemptLog.failed(
        LOG,
        delivery,
        attempt,
        retry.maxAttempts(),
        failed.error(),
        null,
        "ordering key blocked: " + why);
    try {
      if (outbox.reschedule(
          record,
          BlockedKeys.PARKED_UNTIL,
          BlockedKeys.blockedError(now, attempt, failed.error()))) {
        LogFields.delivery(
            queue,
            id,
            record.key().toHex(),
            () ->
                LOG.warn(
                    "outbox queue {}: entry {} failed for good ({}) and its ordering key {} is"
                        + " blocked (ordering.on_failure: block) until an operator skips or retries"
                        + " it (GET /admin/pipelines/{}/blocked-keys); other keys go on",
                    queue,
                    id,
                    why,
                    delivery.orderingKey(),
                    queue));
      } else {
        tookOver(id, "failed for good");
      }
    } catch (RuntimeException e) {
      LOG.warn(
          "outbox queue {}: entry {} failed for good but its key could not be blocked; it will be"
              + " tried again after its claim runs out: {}",
          queue,
          id,
          e.toString());
    }
    forgetUnusedClaims(id);
    Listeners.gaveUp(listener, delivery.pipeline(), attempt, failed.error(), false);
  }

  /** Logs an answer the store fenced off: the claim ran out and another claim took the entry. */
  private void tookOver(long id, String what) {
    LOG.info(
        "outbox queue {}: entry {} {}, but its claim had run out and another claim took it over"
            + " (its answer counts, this one changes nothing); raise claim_timeout if deliveries"
            + " take that long",
        queue,
        id,
        what);
  }

  /**
   * Hands an entry of a blocked key back to the outbox, due when the entry it waits for is (and
   * never before the next poll, so that a key whose failed entry was taken by another instance is
   * not claimed and handed back in a tight loop).
   */
  private void park(long id, long until, long blockerId) {
    long due = Math.max(until, time.wallMillis() + Math.min(pollNanos / 1_000_000, 1_000));
    try {
      outbox.reschedule(
          queue,
          id,
          due,
          "waiting for entry " + blockerId + " of the same ordering key, which waits for a retry");
    } catch (RuntimeException e) {
      LOG.warn(
          "outbox queue {}: entry {} could not be handed back; it comes back after its claim runs"
              + " out: {}",
          queue,
          id,
          e.toString());
    }
  }

  private void deadLetterUndecodable(OutboxRecord record, RuntimeException e, long now) {
    String reason = "the outbox payload cannot be decoded: " + e.getMessage();
    try {
      outbox.deadLetter(queue, record.id(), reason, now);
      LOG.warn(
          "outbox queue {}: entry {} moved to the dead letters: {}", queue, record.id(), reason);
    } catch (RuntimeException inner) {
      LOG.warn(
          "outbox queue {}: entry {} cannot be decoded nor dead lettered: {}",
          queue,
          record.id(),
          inner.toString());
    }
    Listeners.gaveUp(listener, queue, Math.max(1, record.attempts()), reason, true);
  }

  // ---------------------------------------------------------------- bookkeeping (under lock)

  private void release(Entry entry) {
    held.remove(entry.record.id(), entry); // not a newer claim of the same entry
    if (starved && held.size() <= maxInFlight / 2) {
      starved = false;
      wakeUp();
    }
  }

  private void countUnusedClaim(long id) {
    if (unusedClaims.size() >= MAX_TRACKED_UNUSED_CLAIMS) {
      // Only entries that another instance took can linger here; start over rather than grow.
      unusedClaims.clear();
    }
    unusedClaims.merge(id, 1, Integer::sum);
  }

  private void forgetUnusedClaims(long id) {
    lock.lock();
    try {
      unusedClaims.remove(id);
    } finally {
      lock.unlock();
    }
  }

  /** Drops idle blocked lanes whose failed entry never came back (another instance took it). */
  private void sweepBlockedLanes() {
    long now = time.wallMillis();
    lock.lock();
    try {
      if (now - lastSweepMillis < SWEEP_INTERVAL_MILLIS) {
        return;
      }
      lastSweepMillis = now;
      Iterator<Lane> it = lanes.values().iterator();
      while (it.hasNext()) {
        Lane lane = it.next();
        if (lane.isBlocked()
            && !lane.scheduled
            && lane.pending.isEmpty()
            && now >= lane.blockedUntil + claimMillis) {
          it.remove();
        }
      }
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------- closing

  /**
   * Stops: no new claims, no new deliveries; waits up to {@code closeTimeout} for deliveries in
   * progress; hands claimed entries that were not started back to the outbox (due now, so the next
   * run delivers them at once). Entries still being delivered after the timeout come back when
   * their claims run out. Idempotent. Does not close the sink or the store.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    running = false;
    closing = true;
    LockSupport.unpark(loop);
    long deadline = System.nanoTime() + closeTimeout.toNanos();
    try {
      loop.join(Math.max(1, closeTimeout.toMillis()));
      workers.shutdown();
      long left = Math.max(0, deadline - System.nanoTime());
      if (!workers.awaitTermination(left, TimeUnit.NANOSECONDS)) {
        LOG.warn(
            "outbox queue {}: deliveries still running after {}; their entries come back after"
                + " the claim timeout",
            queue,
            closeTimeout);
        workers.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      workers.shutdownNow();
    }
    List<Long> unstarted = new ArrayList<>();
    lock.lock();
    try {
      for (Entry e : held.values()) {
        if (!e.started) {
          unstarted.add(e.record.id());
        }
      }
      held.clear();
      lanes.clear();
    } finally {
      lock.unlock();
    }
    long now = time.wallMillis();
    for (long id : unstarted) {
      try {
        outbox.reschedule(queue, id, now, "the dispatcher stopped before delivering it");
      } catch (RuntimeException e) {
        LOG.debug(
            "outbox queue {}: entry {} not handed back at close: {}", queue, id, e.toString());
      }
    }
  }

  @Override
  public String toString() {
    return "OutboxDispatcher[queue=" + queue + ", sink=" + sink.describe() + "]";
  }

  // ---------------------------------------------------------------- state

  /** A claimed entry held in memory. */
  private static final class Entry {
    /** The latest claim's view (a re-claim while held updates the attempt count). */
    volatile OutboxRecord record;

    final Delivery delivery;
    volatile boolean started;

    /** The attempt is over and its outcome is being written: a new claim is a new delivery. */
    volatile boolean answered;

    Entry(OutboxRecord record, Delivery delivery) {
      this.record = record;
      this.delivery = delivery;
    }
  }

  /** One ordering key's entries, delivered one at a time. Guarded by the dispatcher's lock. */
  private static final class Lane {
    final ArrayDeque<Entry> pending = new ArrayDeque<>();
    boolean scheduled;
    long blockerId = NO_BLOCKER;
    long blockedUntil;

    boolean isBlocked() {
      return blockerId != NO_BLOCKER;
    }

    void unblock() {
      blockerId = NO_BLOCKER;
      blockedUntil = 0;
    }
  }

  private record Parked(long id, long until, long blockerId) {}

  // ---------------------------------------------------------------- builder

  /** Builds and starts an {@link OutboxDispatcher}. Not thread-safe. */
  public static final class Builder {
    private final String queue;
    private final OutboxStore outbox;
    private final Sink sink;
    private RetryPolicy retry = RetryPolicy.DEFAULT;
    private DeliveryListener listener = DeliveryListener.NOOP;
    private TimeSource time = TimeSource.system();
    private DoubleSupplier jitter = () -> ThreadLocalRandom.current().nextDouble();
    private Function<byte[], Delivery> decoder = DeliveryCodec::decode;
    private int concurrency = 4;
    private int batchSize = 32;
    private int maxInFlight = 128;
    private boolean blockOnFailure;
    private Duration pollInterval = Duration.ofSeconds(1);
    private Duration claimTimeout = Duration.ofMinutes(5);
    private Duration closeTimeout = Duration.ofSeconds(10);

    private Builder(String queue, OutboxStore outbox, Sink sink) {
      this.queue = Objects.requireNonNull(queue, "queue");
      this.outbox = Objects.requireNonNull(outbox, "outbox");
      this.sink = Objects.requireNonNull(sink, "sink");
      if (queue.isBlank()) {
        throw new IdemConfigException("outbox queue name must not be blank");
      }
    }

    /**
     * Sets the retry policy (default {@link RetryPolicy#DEFAULT}).
     *
     * @param retry the policy
     * @return this builder
     */
    public Builder retryPolicy(RetryPolicy retry) {
      this.retry = Objects.requireNonNull(retry, "retry");
      return this;
    }

    /**
     * Sets the listener (default: none).
     *
     * @param listener hears outcomes
     * @return this builder
     */
    public Builder listener(DeliveryListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Sets the clock of claims, retries and dead letters (default: the system clock).
     *
     * @param time the time source
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Sets the source of backoff jitter: numbers in {@code [0, 1)} (default: random).
     *
     * @param jitter the source
     * @return this builder
     */
    public Builder jitter(DoubleSupplier jitter) {
      this.jitter = Objects.requireNonNull(jitter, "jitter");
      return this;
    }

    /**
     * Sets how payloads become deliveries (default {@link DeliveryCodec#decode}). A payload it
     * cannot decode is dead lettered at once.
     *
     * @param decoder the decoder
     * @return this builder
     */
    public Builder decoder(Function<byte[], Delivery> decoder) {
      this.decoder = Objects.requireNonNull(decoder, "decoder");
      return this;
    }

    /**
     * Sets how many deliveries may run at once (default 4).
     *
     * @param concurrency 1 to 256
     * @return this builder
     * @throws IdemConfigException if out of range
     */
    public Builder concurrency(int concurrency) {
      if (concurrency < 1 || concurrency > 256) {
        throw new IdemConfigException(
            "outbox delivery concurrency must be 1 to 256, got " + concurrency);
      }
      this.concurrency = concurrency;
      return this;
    }

    /**
     * Sets the most entries one claim takes (default 32).
     *
     * @param batchSize 1 to 1000
     * @return this builder
     * @throws IdemConfigException if out of range
     */
    public Builder batchSize(int batchSize) {
      if (batchSize < 1 || batchSize > 1000) {
        throw new IdemConfigException("outbox batch size must be 1 to 1000, got " + batchSize);
      }
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Sets the most claimed entries held in memory, delivering or waiting (default 128). Keep it
     * small enough that a held entry is delivered well within the claim timeout.
     *
     * @param maxInFlight 1 to 100000
     * @return this builder
     * @throws IdemConfigException if out of range
     */
    public Builder maxInFlight(int maxInFlight) {
      if (maxInFlight < 1 || maxInFlight > 100_000) {
        throw new IdemConfigException(
            "outbox max in flight must be 1 to 100000, got " + maxInFlight);
      }
      this.maxInFlight = maxInFlight;
      return this;
    }

    /**
     * Sets what happens to an entry with an ordering key that fails for good (its retries are
     * exhausted, or the failure is not retryable): {@code false} (default, {@code
     * ordering.on_failure: dead_letter}) moves it to the dead letters and its key moves on; {@code
     * true} ({@code on_failure: block}) parks it as its key's head, so the key stays blocked (in
     * the store: on every instance, across restarts) until an operator skips or retries it ({@link
     * BlockedKeys}). Entries without an ordering key are dead lettered either way.
     *
     * @param blockOnFailure whether a failing ordered entry blocks its key
     * @return this builder
     */
    public Builder blockOnFailure(boolean blockOnFailure) {
      this.blockOnFailure = blockOnFailure;
      return this;
    }

    /**
     * Sets how often the outbox is polled when nobody calls {@link OutboxDispatcher#wakeUp()}
     * (default 1s): the longest delay before a due retry or a left-over entry is picked up.
     *
     * @param pollInterval positive
     * @return this builder
     * @throws IdemConfigException if not positive
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = positive(pollInterval, "outbox poll interval");
      return this;
    }

    /**
     * Sets how long a claim hides an entry from other claims (default 5 minutes): after a crash,
     * entries come back after this long. It must be longer than one delivery attempt plus the time
     * a claimed entry may wait for its turn.
     *
     * @param claimTimeout positive
     * @return this builder
     * @throws IdemConfigException if not positive
     */
    public Builder claimTimeout(Duration claimTimeout) {
      this.claimTimeout = positive(claimTimeout, "outbox claim timeout");
      return this;
    }

    /**
     * Sets how long {@link OutboxDispatcher#close()} waits for deliveries in progress (default
     * 10s).
     *
     * @param closeTimeout positive
     * @return this builder
     * @throws IdemConfigException if not positive
     */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = positive(closeTimeout, "outbox close timeout");
      return this;
    }

    private static Duration positive(Duration d, String what) {
      Objects.requireNonNull(d, what);
      if (d.isNegative() || d.isZero()) {
        throw new IdemConfigException(what + " must be positive, got " + d);
      }
      return d;
    }

    /**
     * Builds the dispatcher and starts its threads: one claim loop ({@code idem-outbox-<queue>})
     * and {@code concurrency} delivery threads, all daemons. It delivers entries left by a previous
     * run too.
     *
     * @return the running dispatcher; close it to stop
     */
    public OutboxDispatcher start() {
      if (maxInFlight < batchSize) {
        maxInFlight = batchSize;
      }
      OutboxDispatcher dispatcher = new OutboxDispatcher(this);
      dispatcher.start();
      return dispatcher;
    }
  }
}
