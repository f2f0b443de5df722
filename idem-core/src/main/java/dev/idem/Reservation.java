package dev.idem;

import dev.idem.spi.OutboxMessage;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Instant;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A single-use handle on a reserved key. Settle it exactly once: {@link #commit()} when the work
 * completed (later events with the key are duplicates), {@link #release()} when it failed or a
 * later step dropped the event (a resend may try again). A second settlement throws {@link
 * ReservationSettledException}.
 *
 * <p>The handle's fencing token makes a late settlement harmless: if the lease ran out and another
 * worker took the key, {@code commit} and {@code release} change nothing and answer {@link
 * Settlement#LEASE_LOST}.
 *
 * <p>If the store is unavailable, {@code commit}/{@code release} throw {@link
 * StoreUnavailableException} and the reservation stays open, so the call may be retried.
 * Thread-safe.
 */
public final class Reservation {
  private static final VarHandle STATE;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Reservation.class, "state", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static final int OPEN = 0;
  private static final int SETTLING = 1;
  private static final int DONE = 2;

  private final Deduplicator owner;
  private final DedupKey key;
  private final long token;
  private final long leaseUntilMillis;

  // Read and written only through STATE: a CAS claims the handle, a release store publishes the
  // settlement (a plain field written before it), an acquire load reads it. No full fence beyond
  // the CAS on the hot path.
  @SuppressWarnings("unused")
  private int state;

  private @Nullable Settlement settlement;

  Reservation(Deduplicator owner, DedupKey key, long token, long leaseUntilMillis) {
    this.owner = owner;
    this.key = key;
    this.token = token;
    this.leaseUntilMillis = leaseUntilMillis;
  }

  /**
   * Returns the reserved key.
   *
   * @return the key
   */
  public DedupKey key() {
    return key;
  }

  /** Returns the deduplicator that made this reservation (the only one that may settle it). */
  Deduplicator owner() {
    return owner;
  }

  /**
   * Returns the scope the key was reserved in.
   *
   * @return the scope
   */
  public Scope scope() {
    return owner.scope();
  }

  /**
   * Returns the fencing token that holds the key.
   *
   * @return the token
   */
  public long token() {
    return token;
  }

  /**
   * Returns when the lease runs out; after that another worker may take the key over.
   *
   * @return the lease's end
   */
  public Instant leaseUntil() {
    return Instant.ofEpochMilli(leaseUntilMillis);
  }

  /**
   * Returns how the reservation was settled, if it was.
   *
   * @return the settlement, or null while open
   */
  public @Nullable Settlement settlement() {
    return (int) STATE.getAcquire(this) == DONE ? settlement : null;
  }

  /**
   * Commits: the work completed, later events with the key are duplicates.
   *
   * @return {@link Settlement#COMMITTED}, or {@link Settlement#LEASE_LOST} if the lease had run out
   * @throws ReservationSettledException if already settled
   * @throws StoreUnavailableException if the store did not answer (the reservation stays open)
   */
  public Settlement commit() {
    return commit(null);
  }

  /**
   * Commits and stores a result that later duplicates receive (replay mode).
   *
   * @param result the bytes to replay, or null
   * @return {@link Settlement#COMMITTED}, or {@link Settlement#LEASE_LOST} if the lease had run out
   * @throws ReservationSettledException if already settled
   * @throws StoreUnavailableException if the store did not answer (the reservation stays open)
   */
  public Settlement commit(byte @Nullable [] result) {
    begin();
    Settlement s;
    try {
      s = owner.settleCommit(this, result);
    } catch (RuntimeException e) {
      reopen();
      throw e;
    }
    return complete(s);
  }

  /**
   * Commits and appends messages to the store's outbox in one atomic step (the transactional
   * outbox): once this returns {@link Settlement#COMMITTED}, the key and every message are recorded
   * together; on {@link Settlement#LEASE_LOST} neither is. Use it to accept an event for
   * asynchronous delivery.
   *
   * @param messages the messages to deliver later, at least one
   * @return {@link Settlement#COMMITTED}, or {@link Settlement#LEASE_LOST} if the lease had run out
   * @throws ReservationSettledException if already settled
   * @throws IllegalStateException if the deduplicator's store has no outbox ({@link
   *     dev.idem.spi.StoreCapabilities#outbox()})
   * @throws StoreUnavailableException if the store did not answer (the reservation stays open)
   */
  public Settlement commitAndEnqueue(List<OutboxMessage> messages) {
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    owner.outbox(); // fails before settling if there is no outbox
    begin();
    Settlement s;
    try {
      s = owner.settleCommitAndEnqueue(this, messages);
    } catch (RuntimeException e) {
      reopen();
      throw e;
    }
    return complete(s);
  }

  /**
   * Releases: the key is absent again and a resend may try.
   *
   * @return {@link Settlement#RELEASED}, or {@link Settlement#LEASE_LOST} if the lease had run out
   * @throws ReservationSettledException if already settled
   * @throws StoreUnavailableException if the store did not answer (the reservation stays open)
   */
  public Settlement release() {
    begin();
    Settlement s;
    try {
      s = owner.settleRelease(this);
    } catch (RuntimeException e) {
      reopen();
      throw e;
    }
    return complete(s);
  }

  /**
   * Splits the reservation over {@code children} pieces of work (a fan-out after dedup): the key is
   * committed once every child has succeeded, and released as soon as one fails.
   *
   * @param children how many children will report; at least 1
   * @return the fan-out that the children report to
   * @throws ReservationSettledException if already settled
   */
  public FanOut fanOut(int children) {
    Settlement s = settlement();
    if (s != null) {
      throw new ReservationSettledException(scope(), key, s);
    }
    return new FanOut(this, children);
  }

  /** Marks the handle as being settled by a batch; throws if it is not open. */
  void begin() {
    if (!STATE.compareAndSet(this, OPEN, SETTLING)) {
      throw new ReservationSettledException(scope(), key, settlement());
    }
  }

  // The settle methods repeat the same try/catch instead of sharing a helper that takes a lambda:
  // that helper's call site sees three lambdas, is not inlined, and each settlement would allocate
  // its lambda.

  /** Reopens a handle whose settlement failed (unavailable store), so it may be retried. */
  void reopen() {
    STATE.setRelease(this, OPEN);
  }

  /** Records the settlement the store answered. */
  Settlement complete(Settlement s) {
    settlement = s;
    STATE.setRelease(this, DONE);
    return s;
  }

  @Override
  public String toString() {
    Settlement s = settlement();
    return "Reservation[" + owner.scope() + " " + key + (s == null ? " open" : " " + s) + "]";
  }
}
