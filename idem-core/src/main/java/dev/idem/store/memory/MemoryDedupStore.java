package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.internal.ScopedFastPath;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.Ttl;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The in-memory dedup store: compact, bounded per scope with least-recently-used eviction (no
 * frequency-based admission), and a (non-durable) outbox. Nothing survives the process.
 *
 * <pre>{@code
 * MemoryDedupStore store = MemoryDedupStore.builder()
 *     .maxKeysPerScope(50_000)
 *     .listener(metrics)          // evictions and expiries the store notices
 *     .build();
 * Deduplicator dedup = Deduplicator.builder(store, Scope.of("orders")).build();
 * }</pre>
 *
 * <h2>Semantics</h2>
 *
 * Every operation applies exactly the transitions of {@link DedupStateMachine} (leases, sliding and
 * fixed TTLs, fencing tokens, idempotent re-commit, conflicts, result replay), judged by the
 * caller's {@code nowMillis}. A scope's keys are split by hash into stripes (see below), each
 * guarded by its own lock, so operations on one key are <b>linearizable</b> (exactly one of any
 * number of concurrent reserves of an absent key is acquired), and so are all operations on one
 * stripe; threads working on different keys rarely wait for each other, and scopes never block or
 * evict each other. An entry whose lease or TTL has run out reads as absent and its slot is reused
 * in place by the next reserve of that key. Results given to {@code commit} are copied;
 * fingerprints and results handed back ({@link ReserveResult.Duplicate#result()}, {@link
 * KeyState.Committed#result()}) are the stored instances and must not be modified.
 *
 * <h2>Bound and eviction: LRU, exact per stripe</h2>
 *
 * A scope holds at most {@link MemoryStoreConfig#maxKeysFor(Scope) maxKeys} entries, committed and
 * in flight together. A scope with {@code maxKeys} below 1,024 is one stripe; a larger one is split
 * by key hash into up to 16 stripes of at least 512 keys whose bounds add up to {@code maxKeys}
 * exactly (10,000 keys: 16 stripes of 625). Each stripe is a strict LRU over its own keys, so the
 * entry evicted to make room is the least recently used of its stripe: for a small scope that is
 * the least recently used of the scope, for a large one (with keys spread evenly by their digests)
 * one of the scope's oldest. Stripes fill unevenly, so a large scope filling with new keys starts
 * evicting from its fullest stripe a little before it holds {@code maxKeys} in all (filled with
 * exactly 1,000,000 unique keys, a 1,000,000-key scope keeps about 998,700 of them); once every
 * stripe is full it holds exactly {@code maxKeys}. A new key is never the one evicted, and there is
 * no frequency-based admission: a key seen once is kept as long as any other. Splitting is what
 * lets two threads reserving different keys of one scope proceed in parallel instead of taking
 * turns on one lock.
 *
 * <p>Entries are ordered by their last <em>use</em>: the reserve that acquired the key, its applied
 * commit, and every duplicate hit (a reserve that answers {@link ReserveResult.Duplicate}).
 * Reserves answering in-flight or conflict, inspections and repeated commits are not uses. When a
 * reserve of a new key finds its stripe full, the store removes exactly one entry of that stripe
 * (or, in step 3, every dead one), in this order of preference, and never the new key:
 *
 * <ol>
 *   <li>the least recently used committed entry, if its TTL has run out (reported to the listener
 *       as {@link DedupListener#onEvicted evicted} with {@code beforeTtl = false});
 *   <li>the oldest reservation, if its lease has run out ({@link DedupListener#onExpired expired},
 *       {@code leaseExpired = true});
 *   <li>otherwise, if any entry of the stripe may be dead, a sweep of the stripe removes every dead
 *       entry ({@link DedupListener#onExpired expired}); the store keeps lower bounds of the
 *       deadlines, so a sweep (linear in the stripe's size) runs only when an entry may be dead and
 *       at most once per stripe per millisecond of caller time;
 *   <li>otherwise the least recently used committed entry, whose TTL has not run out ({@link
 *       DedupListener#onEvicted evicted} with {@code beforeTtl = true} if it had a TTL, {@code
 *       false} for keys kept without one, for which eviction is the expected end).
 * </ol>
 *
 * A live in-flight reservation is never evicted: that would let a second worker process the same
 * event while the first still runs. If every entry of a full stripe is a live reservation, the
 * reserve throws {@link StoreException} and changes nothing; raise that scope's {@code maxKeys}
 * well above the number of events processed at once (or shorten the lease).
 *
 * <p>The store reports only what its callers cannot see: evictions, and entries found dead while
 * making room or sweeping. A reserve that takes over its own key's dead entry answers {@link
 * ReserveResult.Replaced#EXPIRED_LEASE} or {@link ReserveResult.Replaced#EXPIRED_KEY} instead (the
 * {@link dev.idem.Deduplicator} reports that one). Listeners run on the calling thread after the
 * stripe's lock is released; exceptions they throw are ignored.
 *
 * <h2>Memory</h2>
 *
 * Keys are held as their four digest words in primitive arrays, never as objects: 68 bytes per
 * entry plus 8 to 16 bytes of hash table (kept at most half full, so that looking up a new key
 * rarely walks a chain), in pages of 2,048 entries (a small scope starts at 16), so a scope of one
 * million committed keys retains about 79 bytes per key (Camel's repository about 200).
 * Fingerprints and results are kept only for the entries that have them. Entries stay dense, so
 * removing keys (release, forget, eviction, sweeps) gives pages and table space back as a scope
 * shrinks; {@link #clear} and {@link #close} drop a scope's memory entirely. Dead entries hold
 * their slot until they are reused, swept ({@link #sweepExpired}) or evicted: call {@code
 * sweepExpired} periodically when scopes may shrink by expiry alone.
 *
 * <h2>Outbox</h2>
 *
 * {@link #commitAndEnqueue} appends under the same stripe lock as the commit, so a message becomes
 * visible together with its commit; it is appended only when the commit changes the key from in
 * flight to committed, so a repeated commit with the same token appends nothing. Entries are kept
 * per queue in append order and are not bounded by {@code maxKeys}; each queue keeps at most {@link
 * MemoryStoreConfig#deadLettersPerQueue()} dead letters, dropping the oldest. Entries with an
 * ordering key are handed out one at a time per key, oldest first (see {@link OutboxStore}); the
 * fenced acknowledge, reschedule and dead letter compare the claim's attempts under the queue's
 * monitor. Nothing is durable: this outbox suits tests and single-process services that accept
 * losing pending deliveries on a crash.
 *
 * <p>Thread-safe. {@link #capabilities()}: bounded keys, not durable, no native expiry, outbox.
 */
public final class MemoryDedupStore implements DedupStore, OutboxStore, ScopedFastPath.Source {
  private static final StoreCapabilities CAPABILITIES =
      new StoreCapabilities(true, false, false, true);

  /** Batches hold a stripe's lock for at most this many requests at a time. */
  private static final int BATCH = 64;

  private final MemoryStoreConfig config;
  private final DedupListener listener;
  private final boolean reporting;
  private final int sweepChunk;
  private final int maxStripes;
  private final ConcurrentHashMap<Scope, Stripes> scopes = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, OutboxQueue> queues = new ConcurrentHashMap<>();
  private volatile boolean closed;
  private @Nullable Stripes last;

  private MemoryDedupStore(
      MemoryStoreConfig config, DedupListener listener, int sweepChunk, int maxStripes) {
    this.config = config;
    this.listener = listener;
    this.reporting = listener != DedupListener.NOOP;
    this.sweepChunk = sweepChunk;
    this.maxStripes = maxStripes;
  }

  /**
   * Starts a builder with the defaults: 10,000 keys per scope, no listener.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns a store with the given settings and no listener.
   *
   * @param config the settings
   * @return a new store
   */
  public static MemoryDedupStore of(MemoryStoreConfig config) {
    return new MemoryDedupStore(
        Objects.requireNonNull(config, "config"),
        DedupListener.NOOP,
        Builder.SWEEP_CHUNK,
        Stripes.MAX_STRIPES);
  }

  /**
   * Returns the settings.
   *
   * @return the settings this store was built with
   */
  public MemoryStoreConfig config() {
    return config;
  }

  // ---------------------------------------------------------------------------------------------
  // DedupStore

  /**
   * {@inheritDoc}
   *
   * <p>Linearizable with every other operation on the same scope. A new key in a full scope evicts
   * as described on the class.
   *
   * @throws StoreException if the scope is full of live in-flight reservations
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public ReserveResult reserve(ReserveRequest request) {
    DedupKey key = request.key();
    long h = Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
    Scope scope = request.scope();
    long token = request.token();
    long leaseUntil = request.leaseUntil();
    ReserveResult r =
        reserveFrom(
            segment(scope, h),
            scope,
            key,
            h,
            token,
            request.nowMillis(),
            leaseUntil,
            request.fingerprint(),
            request.ttl());
    return r != null ? r : new ReserveResult.Acquired(token, leaseUntil, Replaced.NOTHING);
  }

  /**
   * Applies a reserve, starting at {@code seg} (the key's stripe as the caller last knew it), and
   * fires the events it recorded once the stripe's lock is released.
   *
   * @return null if the key was absent and is now held; otherwise the answer (see {@link
   *     ScopedFastPath#reserve})
   */
  private @Nullable ReserveResult reserveFrom(
      Segment seg,
      Scope scope,
      DedupKey key,
      long h,
      long token,
      long now,
      long leaseUntil,
      @Nullable Fingerprint fingerprint,
      Ttl ttl) {
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    List<Segment.StoreEvent> events = null;
    try {
      while (true) {
        seg.lock();
        try {
          if (!seg.retired) {
            try {
              int code = seg.reserve(h, w0, w1, w2, w3, token, now, leaseUntil, fingerprint, ttl);
              return code == Segment.ACQUIRED
                  ? null
                  : code == Segment.ANSWERED
                      ? seg.takeAnswer()
                      : new ReserveResult.Acquired(token, leaseUntil, Segment.replaced(code));
            } finally {
              events = seg.drainEvents();
            }
          }
        } finally {
          seg.unlock();
        }
        seg = segmentAgain(scope, h);
      }
    } finally {
      // Also when the reserve failed: entries removed while making room are gone either way.
      if (events != null) {
        fire(events);
      }
    }
  }

  /** Applies a reserve to the segment of its key, under the segment's lock (for batches). */
  private static ReserveResult reserveIn(
      Segment seg, long h, long w0, long w1, long w2, long w3, ReserveRequest r) {
    long token = r.token();
    long leaseUntil = r.leaseUntil();
    int code =
        seg.reserve(h, w0, w1, w2, w3, token, r.nowMillis(), leaseUntil, r.fingerprint(), r.ttl());
    return code == Segment.ANSWERED
        ? seg.takeAnswer()
        : new ReserveResult.Acquired(token, leaseUntil, Segment.replaced(code));
  }

  /**
   * {@inheritDoc}
   *
   * <p>The result bytes are copied before they are stored.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public SettleResult commit(CommitRequest request) {
    Scope scope = request.scope();
    DedupKey key = request.key();
    long h = Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
    return Objects.requireNonNull(
        commitFrom(
            segment(scope, h),
            scope,
            key,
            h,
            request.token(),
            request.nowMillis(),
            request.ttl(),
            request.result(),
            null,
            null));
  }

  /**
   * Applies a commit, starting at {@code seg} (the key's stripe as the caller last knew it). With a
   * {@code claimer}, the facade's handle is claimed first in the same hold of the key's lock (and
   * given back if the commit throws).
   *
   * @return null only if the claimer could not claim the handle (nothing changed)
   */
  private @Nullable SettleResult commitFrom(
      Segment seg,
      Scope scope,
      DedupKey key,
      long h,
      long token,
      long now,
      Ttl ttl,
      byte @Nullable [] given,
      ScopedFastPath.@Nullable Claimer claimer,
      @Nullable Object handle) {
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    byte[] result = copy(given);
    long deadline = ttl.expiresAt(now);
    while (true) {
      seg.lock();
      try {
        if (!seg.retired) {
          if (claimer == null) {
            return applied(seg.commit(h, w0, w1, w2, w3, token, now, deadline, result));
          }
          if (!claimer.claim(handle)) {
            return null;
          }
          try {
            return applied(seg.commit(h, w0, w1, w2, w3, token, now, deadline, result));
          } catch (RuntimeException | Error e) {
            claimer.unclaim(handle);
            throw e;
          }
        }
      } finally {
        seg.unlock();
      }
      seg = segmentAgain(scope, h);
    }
  }

  /**
   * Applies a commit to the segment of its key, under the segment's lock.
   *
   * @return as {@link Segment#commit}: null for an idempotent repeat
   */
  private static @Nullable SettleResult commitIn(
      Segment seg,
      long h,
      long w0,
      long w1,
      long w2,
      long w3,
      CommitRequest c,
      byte @Nullable [] result) {
    long now = c.nowMillis();
    return seg.commit(h, w0, w1, w2, w3, c.token(), now, c.ttl().expiresAt(now), result);
  }

  private static SettleResult applied(@Nullable SettleResult s) {
    return s == null ? SettleResult.APPLIED : s;
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public SettleResult release(ReleaseRequest request) {
    DedupKey key = request.key();
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    Scope scope = request.scope();
    Segment seg = segment(scope, h);
    while (true) {
      seg.lock();
      try {
        if (!seg.retired) {
          return seg.release(h, w0, w1, w2, w3, request.token(), request.nowMillis());
        }
      } finally {
        seg.unlock();
      }
      seg = segmentAgain(scope, h);
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public SettleResult extend(ExtendRequest request) {
    DedupKey key = request.key();
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    Scope scope = request.scope();
    Segment seg = segment(scope, h);
    while (true) {
      seg.lock();
      try {
        if (!seg.retired) {
          return seg.extend(
              h, w0, w1, w2, w3, request.token(), request.nowMillis(), request.leaseUntil());
        }
      } finally {
        seg.unlock();
      }
      seg = segmentAgain(scope, h);
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    while (true) {
      Segment seg = existingSegment(scope, h);
      if (seg == null) {
        return KeyState.ABSENT;
      }
      seg.lock();
      try {
        if (!seg.retired) {
          return seg.inspect(h, w0, w1, w2, w3, nowMillis);
        }
      } finally {
        seg.unlock();
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>An entry that has expired but was not yet swept counts as an entry (this method has no clock
   * to judge it by).
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean forget(Scope scope, DedupKey key) {
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    while (true) {
      Segment seg = existingSegment(scope, h);
      if (seg == null) {
        return false;
      }
      seg.lock();
      try {
        if (!seg.retired) {
          return seg.forget(h, w0, w1, w2, w3);
        }
      } finally {
        seg.unlock();
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Drops the scope's memory entirely; other scopes are not touched. Counts entries that expired
   * but were not yet swept.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public long clear(Scope scope) {
    checkOpen();
    Stripes stripes = scopes.get(scope);
    if (stripes == null) {
      return 0;
    }
    // Retired first, removed from the map after: a thread that holds a stripe's lock and finds it
    // not retired then knows that no newer stripe of the scope exists yet, so two threads working
    // on one key are always under the same lock (the facade's handle claims rely on it). Between
    // the two steps, callers that meet a retired stripe look the scope up again until it is gone.
    long n = retire(stripes);
    scopes.remove(scope, stripes);
    return n;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope and stripe are applied under one acquisition of the
   * stripe's lock (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws StoreException if a scope is full of live in-flight reservations (the requests before
   *     it were applied)
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    return batch(requests, ReserveRequest::scope, ReserveRequest::key, MemoryDedupStore::reserveIn);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope and stripe are applied under one acquisition of the
   * stripe's lock (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    return batch(
        requests,
        CommitRequest::scope,
        CommitRequest::key,
        (seg, h, w0, w1, w2, w3, c) ->
            applied(commitIn(seg, h, w0, w1, w2, w3, c, copy(c.result()))));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope and stripe are applied under one acquisition of the
   * stripe's lock (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    return batch(
        requests,
        ReleaseRequest::scope,
        ReleaseRequest::key,
        (seg, h, w0, w1, w2, w3, r) -> seg.release(h, w0, w1, w2, w3, r.token(), r.nowMillis()));
  }

  /** One request applied to the stripe that holds its key, under the stripe's lock. */
  @FunctionalInterface
  private interface StripeOp<R, A> {
    A apply(Segment seg, long h, long w0, long w1, long w2, long w3, R request);
  }

  /**
   * Applies requests in order, consecutive ones of the same stripe under one acquisition of its
   * lock (at most {@link #BATCH} at a time), firing the events they cause after releasing it.
   */
  private <R, A> List<A> batch(
      List<R> requests,
      Function<R, Scope> scopeOf,
      Function<R, DedupKey> keyOf,
      StripeOp<R, A> op) {
    int n = requests.size();
    List<A> out = new ArrayList<>(n);
    int i = 0;
    boolean retry = false;
    while (i < n) {
      Scope scope = scopeOf.apply(requests.get(i));
      long first = hash(keyOf.apply(requests.get(i)));
      Segment seg = retry ? segmentAgain(scope, first) : segment(scope, first);
      retry = false;
      List<Segment.StoreEvent> events = null;
      try {
        seg.lock();
        try {
          if (seg.retired) {
            retry = true;
            continue;
          }
          try {
            int end = Math.min(n, i + BATCH);
            for (; i < end; i++) {
              R r = requests.get(i);
              DedupKey key = keyOf.apply(r);
              long w0 = key.word(0);
              long w1 = key.word(1);
              long w2 = key.word(2);
              long w3 = key.word(3);
              long h = Segment.hash(w0, w1, w2, w3);
              if (!sameScope(scopeOf.apply(r), scope) || segment(scope, h) != seg) {
                break;
              }
              out.add(op.apply(seg, h, w0, w1, w2, w3, r));
            }
          } finally {
            events = seg.drainEvents();
          }
        } finally {
          seg.unlock();
        }
      } finally {
        if (events != null) {
          fire(events);
        }
      }
    }
    return out;
  }

  private static long hash(DedupKey key) {
    return Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Reports each removed entry to the listener as {@link DedupListener#onExpired expired}.
   * Scopes are swept one at a time, large ones in chunks, so the sweep never holds a scope's lock
   * for long; entries that die while it runs may be left for the next sweep.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public long sweepExpired(long nowMillis) {
    checkOpen();
    long removed = 0;
    for (Stripes stripes : scopes.values()) {
      removed += sweep(stripes, nowMillis);
    }
    return removed;
  }

  private long sweep(Stripes stripes, long nowMillis) {
    long removed = 0;
    for (Segment seg : stripes.all()) {
      int cursor = -1;
      boolean done = false;
      while (!done) {
        List<Segment.StoreEvent> events = null;
        seg.lock();
        try {
          if (seg.retired) {
            break;
          }
          if (cursor < 0) {
            if (!seg.mayHaveDead(nowMillis)) {
              break;
            }
            cursor = seg.lastSlot();
          }
          int to = Math.max(Segment.firstSlot(), cursor - sweepChunk + 1);
          removed += seg.sweepSlots(cursor, to, nowMillis, true);
          cursor = to - 1;
          done = to <= Segment.firstSlot();
          events = seg.drainEvents();
        } finally {
          seg.unlock();
        }
        if (events != null) {
          fire(events);
        }
      }
    }
    return removed;
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public void checkHealth() {
    checkOpen();
  }

  /**
   * Returns bounded keys, not durable, no native expiry ({@link #sweepExpired} returns the memory
   * of dead entries), outbox.
   *
   * @return the capability flags
   */
  @Override
  public StoreCapabilities capabilities() {
    return CAPABILITIES;
  }

  /**
   * Returns {@code memory(maxKeysPerScope=N)}.
   *
   * @return the description
   */
  @Override
  public String describe() {
    return "memory(maxKeysPerScope=" + config.maxKeysPerScope() + ")";
  }

  /**
   * Drops every key, outbox entry and dead letter. Idempotent; every later operation (all but
   * {@code close}, {@link #capabilities()}, {@link #describe()} and {@link #config()}) throws
   * {@link IllegalStateException}.
   */
  @Override
  public void close() {
    closed = true;
    while (!scopes.isEmpty()) {
      for (Map.Entry<Scope, Stripes> e : scopes.entrySet()) {
        retire(e.getValue()); // before the removal, as in clear
        scopes.remove(e.getKey(), e.getValue());
      }
    }
    queues.clear();
  }

  /**
   * Returns how many entries a scope holds now, committed and in flight, including dead entries not
   * yet swept or reused (for a gauge; never above the scope's {@code maxKeys}).
   *
   * @param scope the scope
   * @return the number of entries
   * @throws IllegalStateException if the store is closed
   */
  public int size(Scope scope) {
    checkOpen();
    Stripes stripes = scopes.get(scope);
    int n = 0;
    if (stripes != null) {
      for (Segment seg : stripes.all()) {
        seg.lock();
        try {
          n += seg.retired ? 0 : seg.size();
        } finally {
          seg.unlock();
        }
      }
    }
    return n;
  }

  /** Checks a scope's structural invariants (for tests); see {@link Segment#verify()}. */
  void verify(Scope scope) {
    Stripes stripes = scopes.get(scope);
    if (stripes != null) {
      for (Segment seg : stripes.all()) {
        seg.lock();
        try {
          seg.verify();
        } finally {
          seg.unlock();
        }
      }
    }
  }

  /** Returns the largest slot capacity of a scope's stripes (for tests of page growth). */
  int largestStripeCapacity(Scope scope) {
    Stripes stripes = scopes.get(scope);
    int max = 0;
    if (stripes != null) {
      for (Segment seg : stripes.all()) {
        seg.lock();
        try {
          max = Math.max(max, seg.capacity());
        } finally {
          seg.unlock();
        }
      }
    }
    return max;
  }

  /** Returns a scope's slot capacity and bucket count, summed over its stripes (for tests). */
  int[] footprint(Scope scope) {
    Stripes stripes = scopes.get(scope);
    int[] sum = {0, 0};
    if (stripes != null) {
      for (Segment seg : stripes.all()) {
        seg.lock();
        try {
          sum[0] += seg.capacity();
          sum[1] += seg.bucketCount();
        } finally {
          seg.unlock();
        }
      }
    }
    return sum;
  }

  // ---------------------------------------------------------------------------------------------
  // OutboxStore

  /**
   * {@inheritDoc}
   *
   * <p>The message is appended under the same stripe lock as the commit, and only when the commit
   * changes the key from in flight to committed: a repeated commit with the token that committed
   * answers {@link SettleResult#APPLIED} and appends nothing.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    return commitAndEnqueueCopied(commit, List.copyOf(messages));
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException if {@code max} or {@code claimMillis} is less than 1
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    if (max < 1 || claimMillis < 1) {
      throw new IllegalArgumentException(
          "claim needs max >= 1 and claimMillis >= 1, got " + max + " and " + claimMillis);
    }
    OutboxQueue q = existingQueue(queue);
    return q == null ? List.of() : q.claim(max, nowMillis, claimMillis);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean acknowledge(String queue, long id) {
    OutboxQueue q = existingQueue(queue);
    return q != null && q.acknowledge(id, -1);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    OutboxQueue q = existingQueue(claimed.queue());
    return q != null && q.acknowledge(claimed.id(), claimed.attempts());
  }

  /**
   * {@inheritDoc}
   *
   * <p>Does nothing if the entry is not in the queue (acknowledged or dead lettered meanwhile).
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    OutboxQueue q = existingQueue(queue);
    if (q != null) {
      q.reschedule(id, -1, notBeforeMillis, error);
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    Objects.requireNonNull(error, "error");
    OutboxQueue q = existingQueue(claimed.queue());
    return q != null && q.reschedule(claimed.id(), claimed.attempts(), notBeforeMillis, error);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Does nothing if the entry is not in the queue. The queue keeps at most {@link
   * MemoryStoreConfig#deadLettersPerQueue()} dead letters, dropping the oldest.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    OutboxQueue q = existingQueue(queue);
    if (q != null) {
      q.deadLetter(id, -1, reason, nowMillis);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>The queue keeps at most {@link MemoryStoreConfig#deadLettersPerQueue()} dead letters,
   * dropping the oldest.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    Objects.requireNonNull(reason, "reason");
    OutboxQueue q = existingQueue(claimed.queue());
    return q != null && q.deadLetter(claimed.id(), claimed.attempts(), reason, nowMillis);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    checkLimit(limit, "deadLetters");
    OutboxQueue q = existingQueue(queue);
    return q == null ? List.of() : q.deadLetters(limit);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    OutboxQueue q = existingQueue(queue);
    return q == null ? List.of() : q.deadLetters(query);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    OutboxQueue q = existingQueue(queue);
    return q == null ? Optional.empty() : q.findDeadLetter(id);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    OutboxQueue q = existingQueue(queue);
    return q == null ? OptionalLong.empty() : q.requeue(id, nowMillis);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    OutboxQueue q = existingQueue(queue);
    return q != null && q.purgeDeadLetter(id);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public long purgeDeadLetters(String queue) {
    OutboxQueue q = existingQueue(queue);
    return q == null ? 0 : q.purgeDeadLetters();
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    checkLimit(limit, "pending");
    OutboxQueue q = existingQueue(queue);
    return q == null ? List.of() : q.pending(limit);
  }

  private static void checkLimit(int limit, String what) {
    if (limit < 1) {
      throw new IllegalArgumentException(what + " needs limit >= 1, got " + limit);
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public long depth(String queue) {
    OutboxQueue q = existingQueue(queue);
    return q == null ? 0 : q.depth();
  }

  // ---------------------------------------------------------------------------------------------

  private SettleResult commitAndEnqueueCopied(CommitRequest c, List<OutboxMessage> messages) {
    DedupKey key = c.key();
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    byte[] result = copy(c.result());
    OutboxQueue[] queues = new OutboxQueue[messages.size()];
    for (int i = 0; i < queues.length; i++) {
      queues[i] = queue(messages.get(i).queue());
    }
    Scope scope = c.scope();
    Segment seg = segment(scope, h);
    while (true) {
      seg.lock();
      try {
        if (!seg.retired) {
          SettleResult s = commitIn(seg, h, w0, w1, w2, w3, c, result);
          if (s == SettleResult.APPLIED) {
            for (int i = 0; i < queues.length; i++) {
              OutboxMessage m = messages.get(i);
              queues[i].append(m.key(), m.payload(), m.orderingKey(), c.nowMillis());
            }
          }
          return applied(s);
        }
      } finally {
        seg.unlock();
      }
      seg = segmentAgain(scope, h);
    }
  }

  private static byte @Nullable [] copy(byte @Nullable [] bytes) {
    return bytes == null ? null : bytes.clone();
  }

  private static boolean sameScope(Scope a, Scope b) {
    return a == b || a.equals(b);
  }

  /**
   * Returns the stripe of a key in a scope, from a one-entry cache when the caller passes the
   * cached {@link Scope} instance (a {@link dev.idem.Deduplicator} always passes the same one). The
   * cache is a plain field: a racy read is harmless, because the stripes' scope is final and
   * everything else is read under a stripe's lock, and a retired stripe sends the caller to {@link
   * #segmentAgain}. It keeps the first scope used until that scope is cleared, so that threads
   * working on different scopes never write it in turn (which would bounce its cache line between
   * cores).
   */
  private Segment segment(Scope scope, long h) {
    checkOpen();
    Stripes stripes = last;
    if (stripes != null && stripes.scope == scope) {
      return stripes.of(h);
    }
    return segmentAgain(scope, h);
  }

  private Segment segmentAgain(Scope scope, long h) {
    return stripes(scope).of(h);
  }

  private Stripes stripes(Scope scope) {
    checkOpen();
    Stripes stripes = scopes.get(scope);
    if (stripes == null) {
      stripes = scopes.computeIfAbsent(scope, this::newStripes);
    }
    Stripes cached = last;
    if (cached == null || cached.retired) { // a racy read of retired only decides what to cache
      last = stripes;
    }
    return stripes;
  }

  private @Nullable Segment existingSegment(Scope scope, long h) {
    checkOpen();
    Stripes stripes = scopes.get(scope);
    return stripes == null ? null : stripes.of(h);
  }

  private Stripes newStripes(Scope scope) {
    checkOpen();
    return new Stripes(scope, config.maxKeysFor(scope), maxStripes, reporting);
  }

  /** Retires a scope's stripes (already removed from the map) and counts what they held. */
  private static long retire(Stripes stripes) {
    stripes.retired = true;
    long n = 0;
    for (Segment seg : stripes.all()) {
      seg.lock();
      try {
        seg.retired = true;
        n += seg.clear();
      } finally {
        seg.unlock();
      }
    }
    return n;
  }

  private OutboxQueue queue(String name) {
    checkOpen();
    OutboxQueue q = queues.get(name);
    return q != null
        ? q
        : queues.computeIfAbsent(name, n -> new OutboxQueue(n, config.deadLettersPerQueue()));
  }

  private @Nullable OutboxQueue existingQueue(String name) {
    checkOpen();
    return queues.get(name);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(
          "the memory store is closed; build a new one to keep deduplicating");
    }
  }

  /** Fires events recorded under a stripe's lock; called after the lock is released. */
  private void fire(List<Segment.StoreEvent> events) {
    for (Segment.StoreEvent e : events) {
      try {
        if (e.evicted()) {
          listener.onEvicted(e.scope(), e.key(), e.flag());
        } else {
          listener.onExpired(e.scope(), e.key(), e.flag());
        }
      } catch (RuntimeException ignored) {
        // A listener must never break deduplication.
      }
    }
  }

  /**
   * Returns this store's reserve and commit bound to one scope: what a {@link
   * dev.idem.Deduplicator} calls on its hot path. Not API (its type is internal); use the {@link
   * DedupStore} methods.
   *
   * @param scope the scope
   * @return the bound operations, which behave exactly as {@link #reserve} and {@link #commit} of
   *     that scope
   */
  @Override
  public ScopedFastPath bind(Scope scope) {
    return new Bound(Objects.requireNonNull(scope, "scope"));
  }

  /**
   * One scope's reserve and commit. Caches the scope's stripes in a plain field, as {@link
   * #segment} does for one scope of the whole store, but per deduplicator, so that every scope in
   * use hits its own cache: a racy read is harmless (the stripes' scope is final, everything else
   * is read under a stripe's lock, a retired stripe sends the call back to the map).
   */
  private final class Bound implements ScopedFastPath {
    private final Scope scope;
    private @Nullable Stripes stripes;

    Bound(Scope scope) {
      this.scope = scope;
    }

    @Override
    public @Nullable ReserveResult reserve(
        DedupKey key,
        @Nullable Fingerprint fingerprint,
        long token,
        long nowMillis,
        long leaseUntil,
        Ttl ttl) {
      long h = Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
      return reserveFrom(segment(h), scope, key, h, token, nowMillis, leaseUntil, fingerprint, ttl);
    }

    @Override
    public @Nullable SettleResult commit(
        DedupKey key,
        long token,
        long nowMillis,
        Ttl ttl,
        byte @Nullable [] result,
        ScopedFastPath.Claimer claimer,
        Object handle) {
      long h = Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
      return commitFrom(segment(h), scope, key, h, token, nowMillis, ttl, result, claimer, handle);
    }

    @Override
    public boolean claim(DedupKey key, ScopedFastPath.Claimer claimer, Object handle) {
      long h = Segment.hash(key.word(0), key.word(1), key.word(2), key.word(3));
      Segment seg = segment(h);
      while (true) {
        seg.lock();
        try {
          if (!seg.retired) {
            return claimer.claim(handle);
          }
        } finally {
          seg.unlock();
        }
        seg = segmentAgain(scope, h);
      }
    }

    private Segment segment(long h) {
      checkOpen();
      Stripes s = stripes;
      if (s == null || s.retired) {
        s = stripes(scope);
        stripes = s;
      }
      return s.of(h);
    }
  }

  /** Builds a {@link MemoryDedupStore}. Not thread-safe; {@link #build()} copies its values. */
  public static final class Builder {
    static final int SWEEP_CHUNK = 1 << 16;

    private int maxKeysPerScope = MemoryStoreConfig.DEFAULT_MAX_KEYS;
    private final Map<Scope, Integer> maxKeysByScope = new HashMap<>();
    private int deadLettersPerQueue = MemoryStoreConfig.DEFAULT_DEAD_LETTERS_PER_QUEUE;
    private DedupListener listener = DedupListener.NOOP;
    private int sweepChunk = SWEEP_CHUNK;
    private int maxStripes = Stripes.MAX_STRIPES;

    private Builder() {}

    /**
     * Sets how many entries (committed and in flight) each scope may hold; beyond it the least
     * recently used committed key is evicted.
     *
     * @param maxKeys 1 to {@value MemoryStoreConfig#MAX_KEYS}; default 10,000
     * @return this builder
     * @throws IdemConfigException if out of range
     */
    public Builder maxKeysPerScope(int maxKeys) {
      MemoryStoreConfig.checkMaxKeys("maxKeysPerScope", maxKeys);
      this.maxKeysPerScope = maxKeys;
      return this;
    }

    /**
     * Sets the bound of one scope, overriding {@link #maxKeysPerScope(int)} for it.
     *
     * @param scope the scope
     * @param maxKeys 1 to {@value MemoryStoreConfig#MAX_KEYS}
     * @return this builder
     * @throws IdemConfigException if out of range
     */
    public Builder maxKeys(Scope scope, int maxKeys) {
      Objects.requireNonNull(scope, "scope");
      MemoryStoreConfig.checkMaxKeys("maxKeys for scope " + scope, maxKeys);
      maxKeysByScope.put(scope, maxKeys);
      return this;
    }

    /**
     * Sets how many dead letters each outbox queue keeps (the oldest is dropped beyond it).
     *
     * @param limit at least 1; default 10,000
     * @return this builder
     * @throws IdemConfigException if below 1
     */
    public Builder deadLettersPerQueue(int limit) {
      if (limit < 1) {
        throw new IdemConfigException(
            "deadLettersPerQueue must be at least 1, got "
                + limit
                + ": it is how many failed deliveries each outbox queue keeps for an operator");
      }
      this.deadLettersPerQueue = limit;
      return this;
    }

    /**
     * Sets the listener for what the store itself notices: evictions, and entries found dead while
     * making room or sweeping. Decisions and settlements are reported by the {@link
     * dev.idem.Deduplicator}'s listeners, not here.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(DedupListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Sets how many slots a sweep visits per hold of a stripe's lock (tests use small ones). */
    Builder sweepChunk(int slots) {
      if (slots < 1) {
        throw new IllegalArgumentException("sweep chunk must be positive, got " + slots);
      }
      this.sweepChunk = slots;
      return this;
    }

    /** Caps how many stripes a scope is split into (tests use 1 for one large stripe). */
    Builder maxStripes(int stripes) {
      if (Integer.bitCount(stripes) != 1 || stripes > Stripes.MAX_STRIPES) {
        throw new IllegalArgumentException("stripes must be a power of two up to 16: " + stripes);
      }
      this.maxStripes = stripes;
      return this;
    }

    /**
     * Returns the settings as they are now.
     *
     * @return the validated settings
     * @throws IdemConfigException if a value is not allowed
     */
    public MemoryStoreConfig config() {
      return new MemoryStoreConfig(maxKeysPerScope, maxKeysByScope, deadLettersPerQueue);
    }

    /**
     * Builds the store.
     *
     * @return a new, empty store
     * @throws IdemConfigException if a value is not allowed
     */
    public MemoryDedupStore build() {
      return new MemoryDedupStore(config(), listener, sweepChunk, maxStripes);
    }
  }
}
