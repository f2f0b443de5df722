package dev.idem;

import dev.idem.internal.ScopedFastPath;
import dev.idem.spi.OutboxMessage;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
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
 * <p>A holder whose work may outlast the lease renews it with {@link #extend(Duration)} (e.g. every
 * third of the lease), so the lease can be short: a crashed holder then blocks the key for at most
 * one lease, while a live one keeps single flight as long as it keeps renewing.
 *
 * <p>If the store is unavailable, {@code commit}/{@code release} throw {@link
 * StoreUnavailableException} and the reservation stays open, so the call may be retried.
 * Thread-safe.
 */
public final class Reservation {
  private static final VarHandle STATE;
  private static final VarHandle LEASE;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Reservation.class, "state", int.class);
      LEASE =
          MethodHandles.lookup().findVarHandle(Reservation.class, "leaseUntilMillis", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static final Duration ONE_MILLI = Duration.ofMillis(1);
  private static final Duration MAX_MILLIS = Duration.ofMillis(Long.MAX_VALUE);

  private static final int OPEN = 0;
  private static final int SETTLING = 1;

  /** Settled: {@code DONE + settlement.ordinal()}. */
  private static final int DONE = 2;

  private static final Settlement[] SETTLEMENTS = Settlement.values();

  private final Deduplicator owner;
  private final DedupKey key;
  private final long token;

  // Only ever moves later. Written plainly by the constructor and with a release store (through
  // LEASE, under this object's monitor) by extend; read with an acquire load. Not volatile: a
  // volatile store is followed by a locked instruction on x86, and the constructor runs once per
  // acquired event.
  private long leaseUntilMillis;

  // Read and written only through STATE: a CAS claims the handle, a release store publishes the
  // settlement (encoded in the state itself, so that the handle is 40 bytes rather than 48 with a
  // separate field: it is allocated once per acquired event), an acquire load reads it. No full
  // fence beyond the CAS on the hot path.
  @SuppressWarnings("unused")
  private int state;

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
   * Returns when the lease runs out, as far as this handle knows (the reservation's lease, moved by
   * each applied {@link #extend}); after that another worker may take the key over.
   *
   * @return the lease's end
   */
  public Instant leaseUntil() {
    return Instant.ofEpochMilli((long) LEASE.getAcquire(this));
  }

  /**
   * Renews the lease by the deduplicator's configured lease ({@link DedupConfig#lease()}); see
   * {@link #extend(Duration)}.
   *
   * @return true if the lease was renewed, false if it was lost
   * @throws ReservationSettledException if already settled
   * @throws StoreUnavailableException if the store did not answer (nothing is known to have
   *     changed)
   */
  public boolean extend() {
    return extend(owner.lease());
  }

  /**
   * Renews the lease, fenced by this handle's token, in one atomic step in the store: if the store
   * still holds this reservation and its lease has not run out, the lease now runs until {@code now
   * + lease} (or stays where it was if that is later: a renewal never shortens a lease) and this
   * returns true. Otherwise (the lease ran out, the key was taken over or forgotten) nothing
   * changes and this returns false: the work no longer holds the key, and a later {@code commit} or
   * {@code release} answers {@link Settlement#LEASE_LOST}. A lapsed lease is never renewed, even if
   * nobody took the key over.
   *
   * <p>Does not settle the reservation: commit or release it as usual afterwards. May be called
   * from another thread than the one doing the work (a renewal timer), any number of times.
   *
   * @param lease how long from now the key should stay blocked; at least 1 ms
   * @return true if the lease was renewed, false if it was lost
   * @throws IllegalArgumentException if the lease is not at least 1 ms
   * @throws ReservationSettledException if already settled
   * @throws StoreUnavailableException if the store did not answer (nothing is known to have
   *     changed)
   */
  public boolean extend(Duration lease) {
    Objects.requireNonNull(lease, "lease");
    if (lease.compareTo(ONE_MILLI) < 0) {
      throw new IllegalArgumentException(
          "an extend's lease must be at least 1ms, got " + lease + " (key " + key.toHex() + ")");
    }
    Settlement settled = settlement();
    if (settled != null) {
      throw new ReservationSettledException(scope(), key, settled);
    }
    long millis = lease.compareTo(MAX_MILLIS) > 0 ? Long.MAX_VALUE : lease.toMillis();
    long until = owner.extendLease(this, millis);
    if (until == Long.MIN_VALUE) {
      return false;
    }
    synchronized (this) {
      if (until > leaseUntilMillis) {
        LEASE.setRelease(this, until);
      }
    }
    return true;
  }

  /**
   * Returns how the reservation was settled, if it was.
   *
   * @return the settlement, or null while open
   */
  public @Nullable Settlement settlement() {
    int s = (int) STATE.getAcquire(this);
    return s >= DONE ? SETTLEMENTS[s - DONE] : null;
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
    Settlement s;
    if (owner.claimsUnderStoreLock()) {
      // The store claims this handle and commits its key in one hold of the key's lock, and gives
      // the claim back if that fails.
      s = owner.commitClaiming(this, result);
    } else {
      begin();
      try {
        s = owner.settleCommit(this, result);
      } catch (RuntimeException e) {
        reopen();
        throw e;
      }
    }
    return complete(s);
  }

  /**
   * Commits like {@link #commit(byte[])}, but returns before the commit is durable where the store
   * allows it ({@link dev.idem.spi.DedupStore#commitAsync}): the stage completes with the
   * settlement once the commit is as durable as {@link #commit(byte[])}'s return would make it, or
   * exceptionally with a {@link StoreUnavailableException} (the reservation then stays open, as
   * after a failed {@link #commit(byte[])}). Dependent stages may run on the store's writing
   * thread, so they must not block.
   *
   * @param result the bytes to replay, or null
   * @return completes with {@link Settlement#COMMITTED}, or {@link Settlement#LEASE_LOST} if the
   *     lease had run out
   * @throws ReservationSettledException if already settled
   */
  public CompletionStage<Settlement> commitAsync(byte @Nullable [] result) {
    if (owner.claimsUnderStoreLock()) {
      // The memory store's commit does not wait for anything: commit now.
      try {
        return CompletableFuture.completedFuture(commit(result));
      } catch (StoreUnavailableException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    begin();
    CompletionStage<Settlement> answer;
    try {
      answer = owner.settleCommitAsync(this, result);
    } catch (RuntimeException e) {
      reopen();
      throw e;
    }
    CompletableFuture<Settlement> done = new CompletableFuture<>();
    answer.whenComplete(
        (s, error) -> {
          if (error == null) {
            done.complete(complete(s));
          } else {
            reopen();
            done.completeExceptionally(
                error instanceof CompletionException && error.getCause() != null
                    ? error.getCause()
                    : error);
          }
        });
    return done;
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

  /** Marks the handle as being settled; throws if it is not open. */
  void begin() {
    boolean claimed =
        owner.claimsUnderStoreLock()
            ? owner.claimUnderStoreLock(this)
            : STATE.compareAndSet(this, OPEN, SETTLING);
    if (!claimed) {
      throw new ReservationSettledException(scope(), key, settlement());
    }
  }

  /**
   * Claims handles under their key's lock in the memory store, for a deduplicator with a fast path.
   * Every claim of such a handle is made under that lock (see {@link Deduplicator#commitClaiming}
   * and {@link Deduplicator#claimUnderStoreLock}), so plain reads and writes of the state exclude
   * each other; the settlement is then published with a release store, as on the other path.
   */
  static final ScopedFastPath.Claimer CLAIMER =
      new ScopedFastPath.Claimer() {
        @Override
        public boolean claim(Object handle) {
          Reservation r = (Reservation) handle;
          if ((int) STATE.get(r) != OPEN) {
            return false;
          }
          STATE.set(r, SETTLING);
          return true;
        }

        @Override
        public void unclaim(Object handle) {
          ((Reservation) handle).reopen();
        }
      };

  // The settle methods repeat the same try/catch instead of sharing a helper that takes a lambda:
  // that helper's call site sees three lambdas, is not inlined, and each settlement would allocate
  // its lambda.

  /** Reopens a handle whose settlement failed (unavailable store), so it may be retried. */
  void reopen() {
    STATE.setRelease(this, OPEN);
  }

  /** Records the settlement the store answered. */
  Settlement complete(Settlement s) {
    STATE.setRelease(this, DONE + s.ordinal());
    return s;
  }

  @Override
  public String toString() {
    Settlement s = settlement();
    return "Reservation[" + owner.scope() + " " + key + (s == null ? " open" : " " + s) + "]";
  }
}
