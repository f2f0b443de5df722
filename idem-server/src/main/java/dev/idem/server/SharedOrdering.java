package dev.idem.server;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.Reservation;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.key.KeyRule;
import dev.idem.ordering.OrderingGate;
import dev.idem.ordering.Permit;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.OrderingBusyException;
import dev.idem.server.pipeline.OrderingStep;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ordering step of a pipeline whose store is shared by several instances (Redis, PostgreSQL,
 * MariaDB): a key's turn is a local turn (FIFO among this instance's events) plus a lease lock on
 * the ordering key in the shared store, so one key's events run one at a time across every
 * instance.
 *
 * <p>The lock is a reservation of the ordering key's digest in the pipeline's ordering scope
 * ({@code <pipeline>~ordering}), taken with the store's atomic reserve: it is fenced (its token
 * goes downstream as {@code Idem-Fence}), leased for {@code lock_ttl} and renewed every third of it
 * while the event runs, and released when it is done. A dead or paused instance blocks its keys for
 * at most {@code lock_ttl}; a late release of a lock that was taken over changes nothing.
 *
 * <p>Strict mode waits for the lock (polling with backoff from 5 ms to 200 ms) for at most {@code
 * lock_ttl}, then gives up with {@link OrderingBusyException} (the source retries later: {@code
 * 503} for a webhook). Best-effort mode never waits: if another instance holds the key, the event
 * runs at once, without the lock (the seed's semantics).
 *
 * <p>What order means: one key's events never run concurrently while their holders are alive.
 * Within one instance they run in arrival order. Across instances they run in the order they took
 * the lock, which for a sender that waits for each answer before sending the next (how ordered
 * webhooks are usually sent) is the order sent; two events of one key arriving at two instances at
 * the same instant are ordered by the lock, not by arrival. Async delivery keeps the order the
 * shared store accepted events in (the outbox hands out one entry per ordering key at a time).
 */
final class SharedOrdering implements OrderingStep {
  private static final Logger LOG = LoggerFactory.getLogger(SharedOrdering.class);
  private static final long MIN_POLL_MILLIS = 5;
  private static final long MAX_POLL_MILLIS = 200;

  private final String pipeline;
  private final KeyRule rule;
  private final OrderingGate local;
  private final Deduplicator locks;
  private final boolean strict;
  private final ScheduledExecutorService renewals;
  private final TimeSource time;

  /**
   * Creates the step.
   *
   * @param pipeline the pipeline id, for logs
   * @param rule the ordering key rule
   * @param local this instance's gate (its mode and lock TTL are the step's)
   * @param locks a deduplicator on the shared store, scope {@code <pipeline>~ordering}, whose lease
   *     is the lock TTL
   * @param renewals the timer that renews held locks
   * @param time the clock
   */
  SharedOrdering(
      String pipeline,
      KeyRule rule,
      OrderingGate local,
      Deduplicator locks,
      ScheduledExecutorService renewals,
      TimeSource time) {
    this.pipeline = pipeline;
    this.rule = rule;
    this.local = local;
    this.locks = locks;
    this.strict = local.config().mode() == dev.idem.ordering.OrderingMode.STRICT;
    this.renewals = renewals;
    this.time = time;
  }

  @Override
  public @Nullable Turn enter(InboundRequest request) {
    DedupKey lockKey;
    try {
      lockKey = rule.derive(request);
    } catch (KeyDerivationException e) {
      return null; // no ordering key: not ordered with any other event
    }
    String key = lockKey.toHex();
    Permit permit;
    try {
      permit = local.acquire(key);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdemException("interrupted while waiting for the ordering key's turn", e);
    }
    try {
      Reservation lock = lock(lockKey);
      SharedTurn turn = new SharedTurn(key, permit, lock);
      turn.renewal = lock == null ? null : renew(turn);
      return turn;
    } catch (RuntimeException e) {
      permit.close();
      throw e;
    }
  }

  /** Takes the key's lock in the store; null in best-effort mode when another instance holds it. */
  private @Nullable Reservation lock(DedupKey lockKey) {
    long lockTtlMillis = locks.config().lease().toMillis();
    long deadline = time.monotonicNanos() + TimeUnit.MILLISECONDS.toNanos(lockTtlMillis);
    long pause = MIN_POLL_MILLIS;
    while (true) {
      Decision d = locks.reserve(lockKey);
      if (d instanceof Decision.Acquired a) {
        return a.reservation();
      }
      if (!strict) {
        return null;
      }
      if (d instanceof Decision.Duplicate) {
        // A committed lock key cannot be: locks are only released. Forget it and try again.
        locks.forget(lockKey);
        continue;
      }
      if (time.monotonicNanos() - deadline >= 0) {
        throw new OrderingBusyException(
            "another instance held this event's ordering key for longer than ordering.lock_ttl");
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IdemException("interrupted while waiting for the ordering key's lock", e);
      }
      pause = Math.min(MAX_POLL_MILLIS, pause * 2);
    }
  }

  private @Nullable ScheduledFuture<?> renew(SharedTurn turn) {
    Reservation lock = Objects.requireNonNull(turn.lock);
    long every = Math.max(1, locks.config().lease().toMillis() / 3);
    try {
      return renewals.scheduleWithFixedDelay(
          () -> {
            try {
              if (lock.settlement() == null && !lock.extend()) {
                turn.lost = true;
                LOG.warn(
                    "pipeline={} ordering key={} lock lost (it ran out or was taken over)",
                    pipeline,
                    turn.key);
              }
            } catch (StoreUnavailableException e) {
              LOG.debug("pipeline={} ordering lock renewal failed: {}", pipeline, e.getMessage());
            } catch (IdemException e) {
              // settled meanwhile
            }
          },
          every,
          every,
          TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      return null;
    }
  }

  /** A held turn: the local permit and, unless best effort found the key busy, the store lock. */
  private final class SharedTurn implements Turn {
    private final String key;
    private final Permit permit;
    private final @Nullable Reservation lock;
    private @Nullable ScheduledFuture<?> renewal;

    /** Set by a renewal that found the lock ran out or was taken over. */
    private volatile boolean lost;

    SharedTurn(String key, Permit permit, @Nullable Reservation lock) {
      this.key = key;
      this.permit = permit;
      this.lock = lock;
    }

    @Override
    public String key() {
      return key;
    }

    @Override
    public @Nullable String fence() {
      return lock == null ? null : Long.toString(lock.token());
    }

    @Override
    public boolean lockLost(long nowMillis) {
      return lock != null && (lost || nowMillis >= lock.leaseUntil().toEpochMilli());
    }

    @Override
    public void close() {
      if (renewal != null) {
        renewal.cancel(false);
      }
      try {
        if (lock != null && lock.settlement() == null) {
          lock.release();
        }
      } catch (IdemException e) {
        LOG.warn(
            "pipeline={} ordering key={} lock release failed ({}); it frees itself after lock_ttl",
            pipeline,
            key,
            e.getMessage());
      } finally {
        permit.close();
      }
    }
  }
}
