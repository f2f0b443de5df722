package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The in-memory dedup store: compact, bounded per scope with strict least-recently-used eviction,
 * and a (non-durable) outbox. Nothing survives the process.
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
 * caller's {@code nowMillis}. Each scope is guarded by its own monitor, so all operations on one
 * scope are <b>linearizable</b> (in particular per-key linearizable: exactly one of any number of
 * concurrent reserves of an absent key is acquired); scopes never block or evict each other. An
 * entry whose lease or TTL has run out reads as absent and its slot is reused in place by the next
 * reserve of that key. Results given to {@code commit} are copied; fingerprints and results handed
 * back ({@link ReserveResult.Duplicate#result()}, {@link KeyState.Committed#result()}) are the
 * stored instances and must not be modified.
 *
 * <h2>Bound and eviction: strict LRU per scope</h2>
 *
 * A scope holds at most {@link MemoryStoreConfig#maxKeysFor(Scope) maxKeys} entries, committed and
 * in flight together. Entries are ordered by their last <em>use</em>: the reserve that acquired the
 * key, its applied commit, and every duplicate hit (a reserve that answers {@link
 * ReserveResult.Duplicate}). Reserves answering in-flight or conflict, inspections and repeated
 * commits are not uses. When a reserve of a new key finds its scope full, the store removes exactly
 * one entry (or, in step 3, every dead one), in this order of preference, and never the new key:
 *
 * <ol>
 *   <li>the least recently used committed entry, if its TTL has run out (reported to the listener
 *       as {@link DedupListener#onEvicted evicted} with {@code beforeTtl = false});
 *   <li>the oldest reservation, if its lease has run out ({@link DedupListener#onExpired expired},
 *       {@code leaseExpired = true});
 *   <li>otherwise, if any entry of the scope may be dead, a sweep of the scope removes every dead
 *       entry ({@link DedupListener#onExpired expired}); the store keeps lower bounds of the
 *       deadlines, so a sweep (linear in the scope's size) runs only when an entry may be dead and
 *       at most once per scope per millisecond of caller time;
 *   <li>otherwise the least recently used committed entry, whose TTL has not run out ({@link
 *       DedupListener#onEvicted evicted} with {@code beforeTtl = true} if it had a TTL, {@code
 *       false} for keys kept without one, for which eviction is the expected end).
 * </ol>
 *
 * A live in-flight reservation is never evicted: that would let a second worker process the same
 * event while the first still runs. If every entry of a full scope is a live reservation, the
 * reserve throws {@link StoreException} and changes nothing; raise that scope's {@code maxKeys}
 * above the number of events processed at once (or shorten the lease).
 *
 * <p>The store reports only what its callers cannot see: evictions, and entries found dead while
 * making room or sweeping. A reserve that takes over its own key's dead entry answers {@link
 * ReserveResult.Replaced#EXPIRED_LEASE} or {@link ReserveResult.Replaced#EXPIRED_KEY} instead (the
 * {@link dev.idem.Deduplicator} reports that one). Listeners run on the calling thread after the
 * scope's monitor is released; exceptions they throw are ignored.
 *
 * <h2>Memory</h2>
 *
 * Keys are held as their four digest words in primitive arrays, never as objects: 68 bytes per
 * entry plus 4 to 8 bytes of hash table, in pages of 2,048 entries (a small scope starts at 16), so
 * a scope of one million committed keys retains about 74 bytes per key (Camel's repository about
 * 200). Fingerprints and results are kept only for the entries that have them. Entries stay dense,
 * so removing keys (release, forget, eviction, sweeps) gives pages and table space back as a scope
 * shrinks; {@link #clear} and {@link #close} drop a scope's memory entirely. Dead entries hold
 * their slot until they are reused, swept ({@link #sweepExpired}) or evicted: call {@code
 * sweepExpired} periodically when scopes may shrink by expiry alone.
 *
 * <h2>Outbox</h2>
 *
 * {@link #commitAndEnqueue} appends under the same monitor as the commit, so a message becomes
 * visible together with its commit; it is appended only when the commit changes the key from in
 * flight to committed, so a repeated commit with the same token appends nothing. Entries are kept
 * per queue in append order and are not bounded by {@code maxKeys}; each queue keeps at most {@link
 * MemoryStoreConfig#deadLettersPerQueue()} dead letters, dropping the oldest. Nothing is durable:
 * this outbox suits tests and single-process services that accept losing pending deliveries on a
 * crash.
 *
 * <p>Thread-safe. {@link #capabilities()}: bounded keys, not durable, no native expiry, outbox.
 */
public final class MemoryDedupStore implements DedupStore, OutboxStore {
  private static final StoreCapabilities CAPABILITIES =
      new StoreCapabilities(true, false, false, true);

  /** Batches hold a scope's monitor for at most this many requests at a time. */
  private static final int BATCH = 64;

  private final MemoryStoreConfig config;
  private final DedupListener listener;
  private final boolean reporting;
  private final int sweepChunk;
  private final ConcurrentHashMap<Scope, Segment> segments = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, OutboxQueue> queues = new ConcurrentHashMap<>();
  private volatile boolean closed;
  private @Nullable Segment last;

  private MemoryDedupStore(MemoryStoreConfig config, DedupListener listener, int sweepChunk) {
    this.config = config;
    this.listener = listener;
    this.reporting = listener != DedupListener.NOOP;
    this.sweepChunk = sweepChunk;
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
        Objects.requireNonNull(config, "config"), DedupListener.NOOP, Builder.SWEEP_CHUNK);
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
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    Scope scope = request.scope();
    Segment seg = segment(scope);
    List<Segment.StoreEvent> events = null;
    try {
      while (true) {
        synchronized (seg) {
          if (!seg.retired) {
            try {
              return seg.reserve(h, w0, w1, w2, w3, request);
            } finally {
              events = seg.drainEvents();
            }
          }
        }
        seg = segmentAgain(scope);
      }
    } finally {
      // Also when the reserve failed: entries removed while making room are gone either way.
      if (events != null) {
        fire(events);
      }
    }
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
    return commit(request, null);
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
    Segment seg = segment(scope);
    while (true) {
      synchronized (seg) {
        if (!seg.retired) {
          return seg.release(h, w0, w1, w2, w3, request);
        }
      }
      seg = segmentAgain(scope);
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
      Segment seg = existingSegment(scope);
      if (seg == null) {
        return KeyState.ABSENT;
      }
      synchronized (seg) {
        if (!seg.retired) {
          return seg.inspect(h, w0, w1, w2, w3, nowMillis);
        }
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
      Segment seg = existingSegment(scope);
      if (seg == null) {
        return false;
      }
      synchronized (seg) {
        if (!seg.retired) {
          return seg.forget(h, w0, w1, w2, w3);
        }
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
    Segment seg = segments.remove(scope);
    if (seg == null) {
      return 0;
    }
    synchronized (seg) {
      seg.retired = true;
      return seg.clear();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope are applied under one acquisition of the scope's
   * monitor (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws StoreException if a scope is full of live in-flight reservations (the requests before
   *     it were applied)
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    int n = requests.size();
    List<ReserveResult> out = new ArrayList<>(n);
    int i = 0;
    boolean retry = false;
    while (i < n) {
      Scope scope = requests.get(i).scope();
      Segment seg = retry ? segmentAgain(scope) : segment(scope);
      retry = false;
      List<Segment.StoreEvent> events = null;
      try {
        synchronized (seg) {
          if (seg.retired) {
            retry = true;
            continue;
          }
          try {
            int end = Math.min(n, i + BATCH);
            for (; i < end; i++) {
              ReserveRequest r = requests.get(i);
              if (!sameScope(r.scope(), scope)) {
                break;
              }
              DedupKey key = r.key();
              long w0 = key.word(0);
              long w1 = key.word(1);
              long w2 = key.word(2);
              long w3 = key.word(3);
              out.add(seg.reserve(Segment.hash(w0, w1, w2, w3), w0, w1, w2, w3, r));
            }
          } finally {
            events = seg.drainEvents();
          }
        }
      } finally {
        if (events != null) {
          fire(events);
        }
      }
    }
    return out;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope are applied under one acquisition of the scope's
   * monitor (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    int n = requests.size();
    List<SettleResult> out = new ArrayList<>(n);
    int i = 0;
    boolean retry = false;
    while (i < n) {
      Scope scope = requests.get(i).scope();
      Segment seg = retry ? segmentAgain(scope) : segment(scope);
      retry = false;
      synchronized (seg) {
        if (seg.retired) {
          retry = true;
          continue;
        }
        int end = Math.min(n, i + BATCH);
        for (; i < end; i++) {
          CommitRequest c = requests.get(i);
          if (!sameScope(c.scope(), scope)) {
            break;
          }
          DedupKey key = c.key();
          long w0 = key.word(0);
          long w1 = key.word(1);
          long w2 = key.word(2);
          long w3 = key.word(3);
          SettleResult s =
              seg.commit(Segment.hash(w0, w1, w2, w3), w0, w1, w2, w3, c, copy(c.result()));
          out.add(s == null ? SettleResult.APPLIED : s);
        }
      }
    }
    return out;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Consecutive requests of the same scope are applied under one acquisition of the scope's
   * monitor (up to 64 at a time); each request is still its own atomic step.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    int n = requests.size();
    List<SettleResult> out = new ArrayList<>(n);
    int i = 0;
    boolean retry = false;
    while (i < n) {
      Scope scope = requests.get(i).scope();
      Segment seg = retry ? segmentAgain(scope) : segment(scope);
      retry = false;
      synchronized (seg) {
        if (seg.retired) {
          retry = true;
          continue;
        }
        int end = Math.min(n, i + BATCH);
        for (; i < end; i++) {
          ReleaseRequest r = requests.get(i);
          if (!sameScope(r.scope(), scope)) {
            break;
          }
          DedupKey key = r.key();
          long w0 = key.word(0);
          long w1 = key.word(1);
          long w2 = key.word(2);
          long w3 = key.word(3);
          out.add(seg.release(Segment.hash(w0, w1, w2, w3), w0, w1, w2, w3, r));
        }
      }
    }
    return out;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Reports each removed entry to the listener as {@link DedupListener#onExpired expired}.
   * Scopes are swept one at a time, large ones in chunks, so the sweep never holds a scope's
   * monitor for long; entries that die while it runs may be left for the next sweep.
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public long sweepExpired(long nowMillis) {
    checkOpen();
    long removed = 0;
    for (Segment seg : segments.values()) {
      int cursor = -1;
      boolean done = false;
      while (!done) {
        List<Segment.StoreEvent> events = null;
        synchronized (seg) {
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
    while (!segments.isEmpty()) {
      for (Map.Entry<Scope, Segment> e : segments.entrySet()) {
        Segment seg = e.getValue();
        if (segments.remove(e.getKey(), seg)) {
          synchronized (seg) {
            seg.retired = true;
            seg.clear();
          }
        }
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
    Segment seg = existingSegment(scope);
    if (seg == null) {
      return 0;
    }
    synchronized (seg) {
      return seg.retired ? 0 : seg.size();
    }
  }

  /** Checks a scope's structural invariants (for tests); see {@link Segment#verify()}. */
  void verify(Scope scope) {
    Segment seg = segments.get(scope);
    if (seg != null) {
      synchronized (seg) {
        seg.verify();
      }
    }
  }

  /** Returns a scope's slot capacity and bucket count (for tests of growth and shrinking). */
  int[] footprint(Scope scope) {
    Segment seg = segments.get(scope);
    if (seg == null) {
      return new int[] {0, 0};
    }
    synchronized (seg) {
      return new int[] {seg.capacity(), seg.bucketCount()};
    }
  }

  // ---------------------------------------------------------------------------------------------
  // OutboxStore

  /**
   * {@inheritDoc}
   *
   * <p>The message is appended under the same monitor as the commit, and only when the commit
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
    return commit(commit, List.copyOf(messages));
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException if {@code max} or {@code claimMillis} is negative
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    if (max < 0 || claimMillis < 0) {
      throw new IllegalArgumentException(
          "claim needs max >= 0 and claimMillis >= 0, got " + max + " and " + claimMillis);
    }
    OutboxQueue q = existingQueue(queue);
    return q == null || max == 0 ? List.of() : q.claim(max, nowMillis, claimMillis);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public boolean acknowledge(String queue, long id) {
    OutboxQueue q = existingQueue(queue);
    return q != null && q.acknowledge(id);
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
      q.reschedule(id, notBeforeMillis, error);
    }
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
      q.deadLetter(id, reason, nowMillis);
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the store is closed
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    OutboxQueue q = existingQueue(queue);
    return q == null || limit <= 0 ? List.of() : q.deadLetters(limit);
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

  private SettleResult commit(CommitRequest c, @Nullable List<OutboxMessage> messages) {
    DedupKey key = c.key();
    long w0 = key.word(0);
    long w1 = key.word(1);
    long w2 = key.word(2);
    long w3 = key.word(3);
    long h = Segment.hash(w0, w1, w2, w3);
    byte[] result = copy(c.result());
    OutboxQueue[] queues = null;
    if (messages != null) {
      queues = new OutboxQueue[messages.size()];
      for (int i = 0; i < queues.length; i++) {
        queues[i] = queue(messages.get(i).queue());
      }
    }
    Scope scope = c.scope();
    Segment seg = segment(scope);
    while (true) {
      synchronized (seg) {
        if (!seg.retired) {
          SettleResult s = seg.commit(h, w0, w1, w2, w3, c, result);
          if (s == SettleResult.APPLIED && queues != null) {
            for (int i = 0; i < queues.length; i++) {
              OutboxMessage m = messages.get(i);
              queues[i].append(m.key(), m.payload(), c.nowMillis());
            }
          }
          return s == null ? SettleResult.APPLIED : s;
        }
      }
      seg = segmentAgain(scope);
    }
  }

  private static byte @Nullable [] copy(byte @Nullable [] bytes) {
    return bytes == null ? null : bytes.clone();
  }

  private static boolean sameScope(Scope a, Scope b) {
    return a == b || a.equals(b);
  }

  /**
   * Returns the scope's segment, from a one-entry cache when the caller passes the cached {@link
   * Scope} instance (a {@link dev.idem.Deduplicator} always passes the same one). The cache is a
   * plain field: a racy read is harmless, because the segment's scope is final and everything else
   * is read under its monitor, and a retired segment sends the caller to {@link #segmentAgain}. It
   * keeps the first scope used until that scope is cleared, so that threads working on different
   * scopes never write it in turn (which would bounce its cache line between cores).
   */
  private Segment segment(Scope scope) {
    checkOpen();
    Segment seg = last;
    if (seg != null && seg.scope == scope) {
      return seg;
    }
    return segmentAgain(scope);
  }

  private Segment segmentAgain(Scope scope) {
    checkOpen();
    Segment seg = segments.get(scope);
    if (seg == null) {
      seg = segments.computeIfAbsent(scope, this::newSegment);
    }
    Segment cached = last;
    if (cached == null || cached.retired) { // a racy read of retired only decides what to cache
      last = seg;
    }
    return seg;
  }

  private @Nullable Segment existingSegment(Scope scope) {
    checkOpen();
    return segments.get(scope);
  }

  private Segment newSegment(Scope scope) {
    checkOpen();
    return new Segment(scope, config.maxKeysFor(scope), reporting);
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

  /** Fires events recorded under a scope's monitor; called after the monitor is released. */
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

  /** Builds a {@link MemoryDedupStore}. Not thread-safe; {@link #build()} copies its values. */
  public static final class Builder {
    static final int SWEEP_CHUNK = 1 << 16;

    private int maxKeysPerScope = MemoryStoreConfig.DEFAULT_MAX_KEYS;
    private final Map<Scope, Integer> maxKeysByScope = new HashMap<>();
    private int deadLettersPerQueue = MemoryStoreConfig.DEFAULT_DEAD_LETTERS_PER_QUEUE;
    private DedupListener listener = DedupListener.NOOP;
    private int sweepChunk = SWEEP_CHUNK;

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

    /** Sets how many slots a sweep visits per hold of a scope's monitor (tests use small ones). */
    Builder sweepChunk(int slots) {
      if (slots < 1) {
        throw new IllegalArgumentException("sweep chunk must be positive, got " + slots);
      }
      this.sweepChunk = slots;
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
      return new MemoryDedupStore(config(), listener, sweepChunk);
    }
  }
}
