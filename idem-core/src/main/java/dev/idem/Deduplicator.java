package dev.idem;

import dev.idem.internal.ScopedFastPath;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * The dedup step: decides for each event whether it is new, a duplicate, in flight or a conflict,
 * and settles the work it lets through. One instance per {@link Scope}; many instances may share a
 * {@link DedupStore}. Thread-safe.
 *
 * <pre>{@code
 * Deduplicator dedup = Deduplicator.builder(store, Scope.of("orders")).build();
 * RunResult<Void> r = dedup.runOnce(KeyEncoding.ofString(orderId), () -> {
 *   ship(order);            // runs at most once per orderId within the window
 *   return null;
 * });
 * }</pre>
 *
 * <p>Guarantees, per key within a scope: at most one caller holds the key at a time (single
 * flight); the key is committed only by {@link Reservation#commit()}, so failed or dropped work is
 * released and may be retried; a commit or release from a holder whose lease ran out changes
 * nothing. Committed keys are forgotten when their TTL passes or the store evicts them.
 */
public final class Deduplicator {
  private final DedupStore store;
  private final Scope scope;
  private final DedupConfig config;
  private final TimeSource time;
  private final DedupListener listener;
  private final Ttl ttl;
  private final long leaseMillis;

  /**
   * The store's reserve and commit bound to this scope, where the store offers them (the memory
   * store), else null. They behave as {@link DedupStore#reserve} and {@link DedupStore#commit} and
   * cost less: no request objects, no store-wide scope lookup, and no {@code Acquired} answer,
   * which escape analysis could not remove (see {@link ScopedFastPath}).
   */
  private final @Nullable ScopedFastPath fast;

  private Deduplicator(Builder b) {
    this.store = b.store;
    this.scope = b.scope;
    this.config = b.config;
    this.time = b.time;
    this.listener = b.listeners.isEmpty() ? DedupListener.NOOP : DedupListener.all(b.listeners);
    this.ttl = config.storeTtl();
    this.leaseMillis = config.lease().toMillis();
    this.fast = store instanceof ScopedFastPath.Source source ? source.bind(scope) : null;
  }

  /**
   * Starts a builder.
   *
   * @param store where keys are kept
   * @param scope the dedup step
   * @return a builder with the default config and the system clock
   */
  public static Builder builder(DedupStore store, Scope scope) {
    return new Builder(store, scope);
  }

  /**
   * Returns the scope.
   *
   * @return the scope
   */
  public Scope scope() {
    return scope;
  }

  /**
   * Returns the config.
   *
   * @return the config
   */
  public DedupConfig config() {
    return config;
  }

  /**
   * Returns the store.
   *
   * @return the store
   */
  public DedupStore store() {
    return store;
  }

  /**
   * Decides one event by its key.
   *
   * @param key the event's key
   * @return the decision; settle an {@link Decision.Acquired} reservation
   * @throws StoreUnavailableException if the store did not answer
   */
  public Decision reserve(DedupKey key) {
    return reserve(key, null);
  }

  /**
   * Decides one event by its key and payload fingerprint (idempotency-key mode: the same key with
   * another fingerprint is a {@link Decision.Conflict}).
   *
   * @param key the event's key
   * @param fingerprint the payload's fingerprint, or null to skip the conflict check
   * @return the decision
   * @throws StoreUnavailableException if the store did not answer
   */
  public Decision reserve(DedupKey key, @Nullable Fingerprint fingerprint) {
    // The reserve may judge by a late clock (see TimeSource#laggingWallMillis): that only keeps
    // keys and leases alive longer and starts the new lease earlier. The settlements, which prove
    // the lease, read the exact clock: one system clock read per reserve + commit.
    long now = time.laggingWallMillis();
    ScopedFastPath bound = fast;
    if (bound == null) {
      return decide(key, store.reserve(request(key, fingerprint, now)));
    }
    Objects.requireNonNull(key, "key");
    long token = token();
    long leaseUntil = leaseUntil(now);
    ReserveResult answer = bound.reserve(key, fingerprint, token, now, leaseUntil, ttl);
    if (answer == null) {
      listener.onPass(scope, key);
      return new Decision.Acquired(new Reservation(this, key, token, leaseUntil));
    }
    return decide(key, answer);
  }

  /**
   * Decides many events in as few store round trips as the store allows (e.g. a Kafka poll). Each
   * key is decided atomically; the batch as a whole is not. A key that appears twice in the batch
   * is acquired at most once.
   *
   * @param keys the events' keys
   * @return one decision per key, in order
   * @throws StoreUnavailableException if the store did not answer
   */
  public List<Decision> reserveAll(List<DedupKey> keys) {
    long now = time.wallMillis();
    List<ReserveRequest> requests = new ArrayList<>(keys.size());
    for (DedupKey key : keys) {
      requests.add(request(key, null, now));
    }
    List<ReserveResult> results = store.reserveAll(requests);
    List<Decision> decisions = new ArrayList<>(results.size());
    for (int i = 0; i < results.size(); i++) {
      decisions.add(decide(keys.get(i), results.get(i)));
    }
    return decisions;
  }

  /**
   * Commits many reservations of this deduplicator in as few store round trips as the store allows.
   *
   * @param reservations open reservations made by this deduplicator
   * @return one settlement per reservation, in order
   * @throws ReservationSettledException if one was already settled (none is then committed)
   * @throws IllegalArgumentException if one was made by another deduplicator (none is then
   *     committed)
   * @throws StoreUnavailableException if the store did not answer
   */
  public List<Settlement> commitAll(List<Reservation> reservations) {
    long now = time.wallMillis();
    List<CommitRequest> requests = new ArrayList<>(reservations.size());
    int begun = 0;
    try {
      for (Reservation r : reservations) {
        if (r.owner() != this) {
          throw new IllegalArgumentException(
              r
                  + (r.scope().equals(scope)
                      ? " was reserved by another Deduplicator"
                      : " belongs to scope " + r.scope() + ", not to this deduplicator's " + scope)
                  + "; commit it through the Deduplicator that reserved it");
        }
        r.begin();
        begun++;
        requests.add(new CommitRequest(scope, r.key(), r.token(), now, ttl, null));
      }
    } catch (RuntimeException e) {
      reservations.subList(0, begun).forEach(Reservation::reopen);
      throw e;
    }
    List<SettleResult> results;
    try {
      results = store.commitAll(requests);
    } catch (RuntimeException e) {
      reservations.forEach(Reservation::reopen);
      throw e;
    }
    List<Settlement> out = new ArrayList<>(results.size());
    for (int i = 0; i < results.size(); i++) {
      Reservation r = reservations.get(i);
      out.add(r.complete(settled(r.key(), results.get(i), Settlement.COMMITTED)));
    }
    return out;
  }

  /**
   * Runs {@code work} unless its key was seen: commits when it returns, releases when it throws
   * (and rethrows).
   *
   * @param key the work's key
   * @param work what to run at most once
   * @param <T> the work's result
   * @param <E> the work's checked exception
   * @return {@link RunResult.Ran} with the result, or {@link RunResult.Skipped} with the decision
   * @throws E whatever the work threw, after the key was released
   * @throws StoreUnavailableException if the store did not answer
   */
  public <T, E extends Exception> RunResult<T> runOnce(DedupKey key, Work<T, E> work) throws E {
    Decision decision = reserve(key, null);
    if (!(decision instanceof Decision.Acquired acquired)) {
      return new RunResult.Skipped<>(decision);
    }
    T value = runHolding(acquired.reservation(), work);
    return new RunResult.Ran<>(value, acquired.reservation().commit());
  }

  /**
   * Runs {@code work} unless its key was seen, storing its result so that duplicates get it back
   * (replay mode, like Stripe's idempotency keys). The same key with another fingerprint is a
   * conflict.
   *
   * @param key the work's key
   * @param fingerprint the request payload's fingerprint, or null to skip the conflict check
   * @param codec turns results into stored bytes and back
   * @param work what to run at most once
   * @param <T> the work's result
   * @param <E> the work's checked exception
   * @return {@link RunResult.Ran}, {@link RunResult.Replayed} with the stored result, or {@link
   *     RunResult.Skipped}
   * @throws E whatever the work threw, after the key was released
   * @throws StoreUnavailableException if the store did not answer
   */
  public <T, E extends Exception> RunResult<T> runOnce(
      DedupKey key, @Nullable Fingerprint fingerprint, ResultCodec<T> codec, Work<T, E> work)
      throws E {
    Decision decision = reserve(key, fingerprint);
    if (decision instanceof Decision.Duplicate dup && dup.result() != null) {
      return new RunResult.Replayed<>(codec.decode(dup.result()));
    }
    if (!(decision instanceof Decision.Acquired acquired)) {
      return new RunResult.Skipped<>(decision);
    }
    Reservation reservation = acquired.reservation();
    T value = runHolding(reservation, work);
    // Encoding is part of the work: if the result cannot be stored, the key is released.
    byte[] encoded = runHolding(reservation, () -> codec.encode(value));
    return new RunResult.Ran<>(value, reservation.commit(encoded));
  }

  /**
   * Returns a key's state now (a sliding TTL is not refreshed).
   *
   * @param key the key
   * @return its state
   */
  public KeyState inspect(DedupKey key) {
    return store.inspect(scope, key, time.wallMillis());
  }

  /**
   * Forgets a key (admin): the next event with it is new.
   *
   * @param key the key
   * @return whether there was an entry
   */
  public boolean forget(DedupKey key) {
    return store.forget(scope, key);
  }

  /**
   * Forgets every key of this scope.
   *
   * @return how many entries were removed, where the store can count them
   */
  public long clear() {
    return store.clear(scope);
  }

  private static <T, E extends Exception> T runHolding(Reservation reservation, Work<T, E> work)
      throws E {
    try {
      return work.run();
    } catch (Throwable failure) {
      try {
        reservation.release();
      } catch (RuntimeException releaseFailure) {
        // The lease heals an unreleased key; the work's failure is what the caller must see.
        failure.addSuppressed(releaseFailure);
      }
      throw failure;
    }
  }

  private ReserveRequest request(DedupKey key, @Nullable Fingerprint fingerprint, long now) {
    return new ReserveRequest(scope, key, fingerprint, token(), now, leaseMillis, ttl);
  }

  /** Returns when a lease taken at {@code now} runs out, as {@link ReserveRequest#leaseUntil()}. */
  private long leaseUntil(long now) {
    long at = now + leaseMillis;
    return at < now ? Long.MAX_VALUE : at;
  }

  /** Draws a fencing token for a new reservation: random, never 0. */
  private static long token() {
    // The fencing token must only differ from the token of any other reservation of the same key
    // that could still settle; it is not a secret (it never leaves the process through the facade).
    // ThreadLocalRandom costs a few instructions on the calling thread's own seed, with no shared
    // state (a counter shared by all threads would be one more contended cache line per event) and
    // no system call. Each thread's sequence is a bijection of a 64-bit counter, so one thread
    // never repeats a token within 2^64 draws; two threads' sequences start from seeds spread by
    // ThreadLocalRandom's seeder, and two reservations of one key get equal tokens with probability
    // 2^-64.
    long token;
    do {
      token = ThreadLocalRandom.current().nextLong();
    } while (token == 0);
    return token;
  }

  private Decision decide(DedupKey key, ReserveResult result) {
    if (result instanceof ReserveResult.Acquired a) {
      if (a.replaced() != ReserveResult.Replaced.NOTHING) {
        listener.onExpired(scope, key, a.replaced() == ReserveResult.Replaced.EXPIRED_LEASE);
      }
      listener.onPass(scope, key);
      return new Decision.Acquired(new Reservation(this, key, a.token(), a.leaseUntilMillis()));
    }
    if (result instanceof ReserveResult.Duplicate d) {
      listener.onDuplicate(scope, key);
      return new Decision.Duplicate(key, d.result());
    }
    if (result instanceof ReserveResult.InFlight f) {
      listener.onInFlight(scope, key);
      return new Decision.InFlight(key, f.leaseUntilMillis());
    }
    listener.onConflict(scope, key);
    return new Decision.Conflict(key);
  }

  /**
   * Commits a reservation that the caller has claimed ({@link Reservation#begin()}); only for a
   * deduplicator without a fast path (see {@link #commitClaiming}).
   */
  Settlement settleCommit(Reservation r, byte @Nullable [] result) {
    SettleResult answer =
        store.commit(new CommitRequest(scope, r.key(), r.token(), time.wallMillis(), ttl, result));
    return settled(r.key(), answer, Settlement.COMMITTED);
  }

  /**
   * Commits a claimed reservation without waiting for the commit to be durable ({@link
   * DedupStore#commitAsync}); the stage completes with the settlement once it is.
   */
  CompletionStage<Settlement> settleCommitAsync(Reservation r, byte @Nullable [] result) {
    return store
        .commitAsync(new CommitRequest(scope, r.key(), r.token(), time.wallMillis(), ttl, result))
        .thenApply(answer -> settled(r.key(), answer, Settlement.COMMITTED));
  }

  /**
   * Whether {@link Reservation#commitAsync} can return before the commit is durable ({@link
   * DedupStore#commitsAsynchronously}): otherwise it commits before returning, and a caller may as
   * well call {@link Reservation#commit()}.
   *
   * @return true if an asynchronous commit completes later than it returns
   */
  public boolean commitsAsynchronously() {
    return fast == null && store.commitsAsynchronously();
  }

  /** Whether this deduplicator's reservations are claimed under the store's key lock. */
  boolean claimsUnderStoreLock() {
    return fast != null;
  }

  /**
   * Claims and commits a reservation in one hold of its key's lock in the store (a deduplicator
   * with a fast path): the claim needs no compare-and-set of its own.
   *
   * @throws ReservationSettledException if it was settled or is being settled
   */
  Settlement commitClaiming(Reservation r, byte @Nullable [] result) {
    ScopedFastPath bound = Objects.requireNonNull(fast);
    SettleResult answer =
        bound.commit(r.key(), r.token(), time.wallMillis(), ttl, result, Reservation.CLAIMER, r);
    if (answer == null) {
      throw new ReservationSettledException(scope, r.key(), r.settlement());
    }
    return settled(r.key(), answer, Settlement.COMMITTED);
  }

  /**
   * Claims a reservation under its key's lock in the store (a deduplicator with a fast path), for a
   * settlement made through the store's SPI.
   */
  boolean claimUnderStoreLock(Reservation r) {
    return Objects.requireNonNull(fast).claim(r.key(), Reservation.CLAIMER, r);
  }

  Settlement settleCommitAndEnqueue(Reservation r, List<OutboxMessage> messages) {
    SettleResult answer =
        outbox()
            .commitAndEnqueue(
                new CommitRequest(scope, r.key(), r.token(), time.wallMillis(), ttl, null),
                messages);
    return settled(r.key(), answer, Settlement.COMMITTED);
  }

  /** Returns the store as an outbox, or fails saying the store has none. */
  OutboxStore outbox() {
    if (store instanceof OutboxStore box) {
      return box;
    }
    throw new IllegalStateException(
        "the store "
            + store.describe()
            + " has no outbox; use a store whose capabilities include outbox (memory, RocksDB,"
            + " JDBC) for commitAndEnqueue");
  }

  /** Returns the configured lease. */
  Duration lease() {
    return Duration.ofMillis(leaseMillis);
  }

  /**
   * Renews a reservation's lease in the store.
   *
   * @return the deadline asked for ({@code now + leaseMillis}), or {@link Long#MIN_VALUE} if the
   *     store answered STALE
   */
  long extendLease(Reservation r, long leaseMillis) {
    ExtendRequest request =
        new ExtendRequest(scope, r.key(), r.token(), time.wallMillis(), leaseMillis);
    return store.extend(request) == SettleResult.APPLIED ? request.leaseUntil() : Long.MIN_VALUE;
  }

  Settlement settleRelease(Reservation r) {
    SettleResult answer =
        store.release(new ReleaseRequest(scope, r.key(), r.token(), time.wallMillis()));
    return settled(r.key(), answer, Settlement.RELEASED);
  }

  private Settlement settled(DedupKey key, SettleResult answer, Settlement applied) {
    if (answer == SettleResult.STALE) {
      listener.onLeaseLost(scope, key);
      return Settlement.LEASE_LOST;
    }
    if (applied == Settlement.COMMITTED) {
      listener.onCommitted(scope, key);
    } else {
      listener.onReleased(scope, key);
    }
    return applied;
  }

  /** Builds a {@link Deduplicator}. Not thread-safe. */
  public static final class Builder {
    private final DedupStore store;
    private final Scope scope;
    private DedupConfig config = DedupConfig.ofDefaults();
    private TimeSource time = TimeSource.system();
    private final List<DedupListener> listeners = new ArrayList<>();

    private Builder(DedupStore store, Scope scope) {
      this.store = Objects.requireNonNull(store, "store");
      this.scope = Objects.requireNonNull(scope, "scope");
    }

    /**
     * Sets the window, expiry and lease.
     *
     * @param config the config
     * @return this builder
     */
    public Builder config(DedupConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * Sets the clock (tests use {@link ManualTimeSource}).
     *
     * @param time the time source
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Adds a listener for every decision and settlement.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(DedupListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * Returns the deduplicator.
     *
     * @return a new deduplicator
     */
    public Deduplicator build() {
      return new Deduplicator(this);
    }
  }
}
