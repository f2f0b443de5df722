package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * One scope's keys: a chained hash table over dense, paged primitive slots, with two intrusive
 * recency lists (committed entries, in-flight entries). Not thread-safe: every method runs under
 * the segment's lock ({@link #lock()}), which {@link MemoryDedupStore} holds.
 *
 * <p>The lock. A word of the segment itself, taken with one compare-and-set and released with a
 * plain release store: one locked instruction per hold. A {@code synchronized} block costs two
 * while the monitor is thin (a CAS to lock and one to unlock), and once two threads meet on it the
 * JVM inflates the monitor into a separate native object, one more cache line that every hold moves
 * between the cores, and deflates and re-inflates it as it goes idle and busy again. Nothing blocks
 * while holding the lock (no I/O; listeners run after it is released), so a waiter spins briefly,
 * then yields its CPU (on a machine with more runnable threads than cores the holder may be the
 * thread it yields to), then sleeps in short timed parks; it never needs to be woken, so the
 * release needs no check for waiters. Not fair and not reentrant.
 *
 * <p>Slot layout. Slot {@code s} lives in page {@code s >>> PAGE_SHIFT} at index {@code s &
 * PAGE_MASK}; each page is one {@code long[]} (7 longs per slot: the four digest words, deadline,
 * token, since) and one {@code int[]} (3 ints per slot: hash-chain next with the committed flag in
 * bit 31, recency prev, recency next), i.e. 68 bytes per slot. Fingerprints and results live in a
 * side {@code Object[]} page allocated only for pages that have any. Slot numbers 0 and 1 are the
 * sentinels of the committed and in-flight recency lists (their links are fields of the segment,
 * next to its lock word, not page entries); entries occupy slots {@code 2 .. count+1} with no
 * holes: removing an entry moves the last slot into the hole, so memory follows the live count and
 * trailing pages are freed as a scope shrinks. The bucket table holds slot numbers (0 = empty) and
 * is resized at load factor 1/2 (grow) and 1/8 (shrink).
 *
 * <p>The eviction order and its reporting are described on {@link MemoryDedupStore}.
 */
final class Segment extends SegmentPadding {
  static final int PAGE_SHIFT = 11;
  static final int PAGE_SIZE = 1 << PAGE_SHIFT;
  private static final int PAGE_MASK = PAGE_SIZE - 1;

  // Longs per slot and their offsets.
  private static final int LONGS = 7;
  private static final int W0 = 0;
  private static final int W1 = 1;
  private static final int W2 = 2;
  private static final int W3 = 3;
  private static final int DEADLINE = 4;
  private static final int TOKEN = 5;
  private static final int SINCE = 6;

  // Ints per slot and their offsets.
  private static final int INTS = 3;
  private static final int CHAIN = 0;
  private static final int PREV = 1;
  private static final int NEXT = 2;
  private static final int COMMITTED_BIT = 0x8000_0000;
  private static final int CHAIN_MASK = 0x7FFF_FFFF;

  /** Sentinel of the committed entries' recency list (least recently used first). */
  private static final int COMMITTED = 0;

  /** Sentinel of the in-flight entries' list (oldest reservation first). */
  private static final int IN_FLIGHT = 1;

  private static final int FIRST = 2;
  private static final int INITIAL_SLOTS = 16;

  /**
   * Bucket tables hold {@code 2^k - 4} ints, so that with the 16-byte array header they take
   * exactly {@code 2^(k+2)} bytes and fill whole heap regions; {@link #bucketOf} maps a hash onto
   * any length.
   */
  private static final int MIN_BUCKETS = 12;

  /** The largest bucket table (load factor 1 at {@link #MAX_KEYS}, the one case above 1/2). */
  private static final int MAX_BUCKETS = (1 << 30) - 4;

  /** The largest {@code maxKeys} a segment supports (slot numbers must fit in 31 bits). */
  static final int MAX_KEYS = 1 << 30;

  final Scope scope;
  private final int maxKeys;
  private final int scopeMaxKeys;
  private final int stripes;
  private final boolean reporting;

  private long[][] longPages;
  private int[][] intPages;
  private @Nullable Object[][] extraPages;
  private int pages;
  private int capacity;

  private int[] buckets;
  private int count;

  /** No committed entry's deadline is below this (a lower bound, exact right after a sweep). */
  private long committedFloor = Long.MAX_VALUE;

  /** No in-flight entry's deadline is below this (a lower bound, exact right after a sweep). */
  private long inFlightFloor = Long.MAX_VALUE;

  /** Set (under the lock) when the segment left the store; callers then look it up again. */
  boolean retired;

  private static final VarHandle LOCK;

  static {
    try {
      LOCK = MethodHandles.lookup().findVarHandle(Segment.class, "lock", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** 1 while a thread holds the segment, else 0; read and written only through {@link #LOCK}. */
  @SuppressWarnings("unused")
  private int lock;

  // The ends of the two recency lists (see next(int)), declared next to the lock word.
  private int committedFirst;
  private int committedLast;
  private int inFlightFirst;
  private int inFlightLast;

  private @Nullable List<StoreEvent> events;

  /** The answer of the last {@link #reserve} that returned {@link #ANSWERED}, until taken. */
  private @Nullable ReserveResult answer;

  // 64 bytes after the fields above (the JVM lays out a class's references after its primitives,
  // in declaration order), as SegmentPadding puts 64 bytes before them: see SegmentPadding.
  @SuppressWarnings("unused")
  private @Nullable Object q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15;

  /** {@link #reserve} acquired the key, which was absent. */
  static final int ACQUIRED = 0;

  /** {@link #reserve} acquired the key by taking over its reservation, whose lease ran out. */
  static final int ACQUIRED_EXPIRED_LEASE = 1;

  /** {@link #reserve} acquired the key by taking over its committed entry, whose TTL ran out. */
  static final int ACQUIRED_EXPIRED_KEY = 2;

  /** {@link #reserve} did not acquire the key; {@link #takeAnswer()} returns why. */
  static final int ANSWERED = 3;

  /**
   * Creates an empty segment.
   *
   * @param maxKeys this segment's bound
   * @param scopeMaxKeys the whole scope's bound (for messages)
   * @param stripes how many segments the scope is split into (for messages)
   */
  Segment(Scope scope, int maxKeys, int scopeMaxKeys, int stripes, boolean reporting) {
    this.scope = scope;
    this.maxKeys = maxKeys;
    this.scopeMaxKeys = scopeMaxKeys;
    this.stripes = stripes;
    this.reporting = reporting;
    // Under the lock: a thread that finds this segment through a racy read and then takes the
    // lock is guaranteed to see the initial arrays.
    lock();
    try {
      reset();
    } finally {
      unlock();
    }
  }

  /** Takes the segment's lock (see the class comment); pair with {@link #unlock()} in a finally. */
  void lock() {
    if (!LOCK.compareAndSet(this, 0, 1)) {
      lockContended();
    }
  }

  /** Releases the lock: a release store, so everything written under it is seen by the next. */
  void unlock() {
    LOCK.setRelease(this, 0);
  }

  private void lockContended() {
    for (int attempt = 1; ; attempt++) {
      if ((int) LOCK.getOpaque(this) == 0 && LOCK.compareAndSet(this, 0, 1)) {
        return;
      }
      if (attempt < SPINS) {
        Thread.onSpinWait();
      } else if (attempt < SPINS + YIELDS) {
        Thread.yield();
      } else {
        LockSupport.parkNanos(PARK_NANOS);
      }
    }
  }

  /** Busy-wait attempts before a waiter yields: a hold lasts well under a microsecond. */
  private static final int SPINS = 100;

  /** Yields before a waiter parks: the holder may be waiting for a CPU. */
  private static final int YIELDS = 20;

  /** One timed park of a waiter that still finds the lock taken (the holder was descheduled). */
  private static final long PARK_NANOS = 20_000;

  /** A store-originated event, fired after the lock is released. */
  record StoreEvent(Scope scope, DedupKey key, boolean evicted, boolean flag) {}

  // ---------------------------------------------------------------------------------------------
  // Operations (the transitions of DedupStateMachine, applied in place)

  /**
   * Applies a reserve. Takes the request's parts rather than the request, and answers an
   * acquisition with a code rather than a result, so that the caller, which builds the result from
   * values it already has, is small enough to be inlined into its own caller: then neither the
   * request nor the result escapes, and the JIT removes both allocations.
   *
   * @return {@link #ACQUIRED}, {@link #ACQUIRED_EXPIRED_LEASE} or {@link #ACQUIRED_EXPIRED_KEY} if
   *     the key is now held with {@code token} until {@code leaseUntil}; otherwise {@link
   *     #ANSWERED}, and {@link #takeAnswer()} returns the answer
   */
  int reserve(
      long h,
      long w0,
      long w1,
      long w2,
      long w3,
      long token,
      long now,
      long leaseUntil,
      @Nullable Fingerprint given,
      Ttl ttl) {
    int s = find(h, w0, w1, w2, w3);
    int acquired = ACQUIRED;
    if (s != 0) {
      long[] l = longPages[s >>> PAGE_SHIFT];
      int b = (s & PAGE_MASK) * LONGS;
      long deadline = l[b + DEADLINE];
      boolean committed = isCommitted(s);
      if (now < deadline) {
        if (!committed) {
          return answer(new ReserveResult.InFlight(deadline));
        }
        Object extra = extra(s);
        Fingerprint stored = fingerprintOf(extra);
        if (stored != null && given != null && !stored.equals(given)) {
          return answer(new ReserveResult.Conflict(l[b + SINCE]));
        }
        if (ttl.expiry() == Expiry.SLIDING && ttl.expires()) {
          long refreshed = ttl.expiresAt(now);
          if (refreshed != deadline) {
            l[b + DEADLINE] = refreshed;
            deadline = refreshed;
            if (refreshed < committedFloor) {
              committedFloor = refreshed;
            }
          }
        }
        moveToTail(s, COMMITTED);
        return answer(new ReserveResult.Duplicate(l[b + SINCE], deadline, resultOf(extra)));
      }
      // Dead: the key is absent; take the slot over in place.
      acquired = committed ? ACQUIRED_EXPIRED_KEY : ACQUIRED_EXPIRED_LEASE;
      unlinkRecency(s);
    } else {
      s = count >= maxKeys ? makeRoom(now) : 0;
      if (s == 0) {
        s = FIRST + count;
        ensureSlot(s);
        count++;
      }
      long[] l = longPages[s >>> PAGE_SHIFT];
      int b = (s & PAGE_MASK) * LONGS;
      l[b + W0] = w0;
      l[b + W1] = w1;
      l[b + W2] = w2;
      l[b + W3] = w3;
      int[] table = buckets;
      int bucket = bucketOf(h, table.length);
      intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + CHAIN] = table[bucket];
      table[bucket] = s;
      // Load factor 1/2 rather than 1: a new key's lookup (every reserve of one) then meets about
      // half as many chain entries, each a cache miss on its slot's key and its chain link; that
      // made reserve + commit of new keys at 10,000 keys about 10% cheaper in CPU time, for 4 more
      // bytes of table per key (about 79 in all at a million keys).
      if (count > table.length >>> 1 && table.length < MAX_BUCKETS) {
        rehash(((table.length + 4) << 1) - 4);
      }
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    l[b + DEADLINE] = leaseUntil;
    l[b + TOKEN] = token;
    l[b + SINCE] = now;
    setCommitted(s, false);
    setExtra(s, given);
    linkTail(s, IN_FLIGHT);
    if (leaseUntil < inFlightFloor) {
      inFlightFloor = leaseUntil;
    }
    return acquired;
  }

  private int answer(ReserveResult result) {
    answer = result;
    return ANSWERED;
  }

  /** Returns (and forgets) the answer of the last {@link #reserve} that returned ANSWERED. */
  ReserveResult takeAnswer() {
    ReserveResult a = answer;
    if (a == null) {
      throw new IllegalStateException("no reserve answer to take");
    }
    answer = null;
    return a;
  }

  /** Returns what an acquisition code of {@link #reserve} took over. */
  static ReserveResult.Replaced replaced(int code) {
    return code == ACQUIRED
        ? ReserveResult.Replaced.NOTHING
        : code == ACQUIRED_EXPIRED_LEASE
            ? ReserveResult.Replaced.EXPIRED_LEASE
            : ReserveResult.Replaced.EXPIRED_KEY;
  }

  /**
   * Applies a commit.
   *
   * @param deadline when the committed entry expires (the TTL applied to {@code now})
   * @param result the result to store (already copied by the caller), or null
   * @return {@link SettleResult#APPLIED} when the entry changed from in flight to committed, {@code
   *     null} for an idempotent repeat (applied, no change), {@link SettleResult#STALE} otherwise
   */
  @Nullable SettleResult commit(
      long h,
      long w0,
      long w1,
      long w2,
      long w3,
      long token,
      long now,
      long deadline,
      byte @Nullable [] result) {
    int s = find(h, w0, w1, w2, w3);
    if (s == 0) {
      return SettleResult.STALE;
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    if (l[b + TOKEN] != token) {
      return SettleResult.STALE;
    }
    if (now >= l[b + DEADLINE]) {
      return SettleResult.STALE;
    }
    if (isCommitted(s)) {
      return null; // a retried commit with the token that committed: applied, nothing changes
    }
    l[b + DEADLINE] = deadline;
    l[b + SINCE] = now;
    setCommitted(s, true);
    if (result != null) {
      setExtra(s, combine(fingerprintOf(extra(s)), result));
    }
    unlinkRecency(s);
    linkTail(s, COMMITTED);
    if (deadline < committedFloor) {
      committedFloor = deadline;
    }
    return SettleResult.APPLIED;
  }

  SettleResult release(long h, long w0, long w1, long w2, long w3, long token, long now) {
    int s = find(h, w0, w1, w2, w3);
    if (s == 0 || isCommitted(s)) {
      return SettleResult.STALE;
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    if (l[b + TOKEN] != token || now >= l[b + DEADLINE]) {
      return SettleResult.STALE;
    }
    remove(s, h, true);
    return SettleResult.APPLIED;
  }

  /**
   * Applies an extend: the lease of an in-flight entry held by {@code token} and running at {@code
   * now} moves to {@code leaseUntil} if that is later. The entry goes to the in-flight list's tail,
   * which keeps that list close to deadline order for {@link #makeRoom}; the floor stays a lower
   * bound because a deadline only grows.
   */
  SettleResult extend(
      long h, long w0, long w1, long w2, long w3, long token, long now, long leaseUntil) {
    int s = find(h, w0, w1, w2, w3);
    if (s == 0 || isCommitted(s)) {
      return SettleResult.STALE;
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    if (l[b + TOKEN] != token || now >= l[b + DEADLINE]) {
      return SettleResult.STALE;
    }
    if (leaseUntil > l[b + DEADLINE]) {
      l[b + DEADLINE] = leaseUntil;
      moveToTail(s, IN_FLIGHT);
    }
    return SettleResult.APPLIED;
  }

  KeyState inspect(long h, long w0, long w1, long w2, long w3, long now) {
    int s = find(h, w0, w1, w2, w3);
    if (s == 0) {
      return KeyState.ABSENT;
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    long deadline = l[b + DEADLINE];
    if (now >= deadline) {
      return KeyState.ABSENT;
    }
    Object extra = extra(s);
    return isCommitted(s)
        ? new KeyState.Committed(l[b + SINCE], deadline, fingerprintOf(extra), resultOf(extra))
        : new KeyState.InFlight(l[b + SINCE], deadline, fingerprintOf(extra));
  }

  boolean forget(long h, long w0, long w1, long w2, long w3) {
    int s = find(h, w0, w1, w2, w3);
    if (s == 0) {
      return false;
    }
    remove(s, h, true);
    return true;
  }

  /** Removes every entry and returns how many there were; the segment is empty and small after. */
  int clear() {
    int n = count;
    reset();
    return n;
  }

  int size() {
    return count;
  }

  int capacity() {
    return capacity;
  }

  int bucketCount() {
    return buckets.length;
  }

  /** Hands over the events recorded since the last call (null if none). */
  @Nullable List<StoreEvent> drainEvents() {
    List<StoreEvent> e = events;
    if (e != null) {
      // Only then: an unconditional write would make every operation dirty the cache line that
      // holds this segment's table and page references, which the other threads then miss on.
      events = null;
    }
    return e;
  }

  /**
   * Checks every structural invariant (chains, lists, density, floors) and throws {@link
   * IllegalStateException} naming the first one broken. Linear in the size; for tests.
   */
  void verify() {
    int used = FIRST + count;
    check(count >= 0 && count <= maxKeys, "count " + count + " outside 0.." + maxKeys);
    check(used <= capacity, "used slots " + used + " exceed capacity " + capacity);
    check(Integer.bitCount(buckets.length + 4) == 1, "bucket count not a power of two less 4");
    int chained = 0;
    for (int bucket = 0; bucket < buckets.length; bucket++) {
      for (int s = buckets[bucket]; s != 0; s = chain(s)) {
        check(s >= FIRST && s < used, "chain reaches slot " + s + " outside 2.." + (used - 1));
        check(bucketOf(hashOf(s), buckets.length) == bucket, "slot " + s + " in wrong bucket");
        check(++chained <= count, "a chain loops");
      }
    }
    check(chained == count, "chains hold " + chained + " slots, count is " + count);
    int listed = 0;
    for (int list : new int[] {COMMITTED, IN_FLIGHT}) {
      int prev = list;
      for (int s = next(list); s != list; s = next(s)) {
        check(s >= FIRST && s < used, "list reaches slot " + s);
        check(prev(s) == prev, "bad prev link");
        check(isCommitted(s) == (list == COMMITTED), "slot " + s + " in the wrong list");
        long d = deadline(s);
        check(d >= (list == COMMITTED ? committedFloor : inFlightFloor), "floor above a deadline");
        check(++listed <= count, "a list loops");
        prev = s;
      }
      check(prev(list) == prev, "list tail out of date");
    }
    check(listed == count, "lists hold " + listed + " slots, count is " + count);
    for (int s = FIRST; s < used; s++) {
      long[] l = longPages[s >>> PAGE_SHIFT];
      int b = (s & PAGE_MASK) * LONGS;
      check(
          find(hashOf(s), l[b + W0], l[b + W1], l[b + W2], l[b + W3]) == s,
          "slot " + s + " not found by its key (duplicate key?)");
    }
    for (int p = pages; p < longPages.length; p++) {
      check(longPages[p] == null && intPages[p] == null, "page " + p + " beyond the last kept");
    }
    if (extraPages != null) {
      for (int s = used; s < capacity; s++) {
        check(extra(s) == null, "free slot " + s + " still holds a fingerprint or result");
      }
    }
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException("memory store segment corrupt: " + what);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Eviction and expiry

  /**
   * Makes room for one new entry in a full segment.
   *
   * @return a slot detached from every list and chain, to be overwritten by the caller, or 0 if
   *     sweeping dead entries made room (the caller appends a new slot)
   * @throws StoreException if every entry is a live in-flight reservation
   */
  private int makeRoom(long now) {
    // 1. The least recently used committed entry, if it is already dead.
    int c = next(COMMITTED);
    long expires = c == COMMITTED ? Long.MAX_VALUE : deadline(c);
    if (c != COMMITTED && now >= expires) {
      report(c, true, false);
      return detach(c);
    }
    // 2. The oldest reservation, if its lease ran out.
    int f = next(IN_FLIGHT);
    if (f != IN_FLIGHT && now >= deadline(f)) {
      report(f, false, true);
      return detach(f);
    }
    // 3. Any other dead entry (prefer expired to live). The floors are lower bounds of the
    // deadlines, exact after a sweep, so a sweep runs only when an entry may be dead, and after it
    // both floors are above now: at most one sweep per scope per millisecond of caller time.
    // Either way every dead entry goes: a committed one may be dead only if now has reached the
    // committed floor, and then all slots are swept; otherwise only the in-flight list is walked.
    int removed = 0;
    if (now >= committedFloor) {
      removed = sweepSlots(FIRST + count - 1, FIRST, now, false);
    } else if (now >= inFlightFloor) {
      removed = sweepInFlight(now, false);
    }
    if (removed > 0) {
      return 0;
    }
    // 4. The least recently used committed entry (unchanged by a sweep that removed nothing), live:
    // an eviction before its TTL.
    if (c == COMMITTED) {
      throw new StoreException(
          "memory store scope "
              + scope
              + " is full: all of its "
              + (stripes == 1
                  ? maxKeys + " keys"
                  : maxKeys
                      + " keys in the stripe of this key (1 of "
                      + stripes
                      + " stripes sharing the scope's maxKeys of "
                      + scopeMaxKeys
                      + ")")
              + " are in flight, and evicting one would let a second worker process the same"
              + " event. Raise maxKeys for this scope above the number of events processed at"
              + " once, or shorten the lease so that crashed reservations free their keys sooner");
    }
    report(c, true, expires != Long.MAX_VALUE);
    return detach(c);
  }

  /**
   * Removes dead in-flight entries by walking the in-flight list, and makes {@link #inFlightFloor}
   * exact.
   */
  private int sweepInFlight(long now, boolean shrink) {
    int removed = 0;
    long floor = Long.MAX_VALUE;
    int s = next(IN_FLIGHT);
    while (s != IN_FLIGHT) {
      int after = next(s);
      long d = deadline(s);
      if (now >= d) {
        report(s, false, true);
        int last = FIRST + count - 1;
        remove(s, hashOf(s), shrink);
        removed++;
        if (after == last) {
          after = s; // the last slot moved into the hole
        }
      } else if (d < floor) {
        floor = d;
      }
      s = after;
    }
    inFlightFloor = floor;
    return removed;
  }

  /**
   * Removes dead entries among slots {@code from} down to {@code to}. When the range covers every
   * slot, the floors become exact; otherwise they are only lowered.
   *
   * @return how many entries were removed
   */
  int sweepSlots(int from, int to, long now, boolean shrink) {
    boolean whole = from >= FIRST + count - 1 && to <= FIRST;
    int removed = 0;
    long committedMin = Long.MAX_VALUE;
    long inFlightMin = Long.MAX_VALUE;
    for (int s = Math.min(from, FIRST + count - 1); s >= to; s--) {
      long d = deadline(s);
      boolean committed = isCommitted(s);
      if (now >= d) {
        report(s, false, !committed);
        // Slot s now holds what was the last slot, which this descending scan has already seen.
        remove(s, hashOf(s), shrink);
        removed++;
      } else if (committed) {
        committedMin = Math.min(committedMin, d);
      } else {
        inFlightMin = Math.min(inFlightMin, d);
      }
    }
    if (whole) {
      committedFloor = committedMin;
      inFlightFloor = inFlightMin;
    }
    return removed;
  }

  /** Whether {@link #sweepSlots} could find anything at {@code now}. */
  boolean mayHaveDead(long now) {
    return count > 0 && (now >= committedFloor || now >= inFlightFloor);
  }

  /** The highest slot in use, for a caller that sweeps in chunks from the top. */
  int lastSlot() {
    return FIRST + count - 1;
  }

  static int firstSlot() {
    return FIRST;
  }

  private void report(int s, boolean evicted, boolean flag) {
    if (!reporting) {
      return;
    }
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    DedupKey key = DedupKey.ofWords(l[b + W0], l[b + W1], l[b + W2], l[b + W3]);
    if (events == null) {
      events = new ArrayList<>(2);
    }
    events.add(new StoreEvent(scope, key, evicted, flag));
  }

  // ---------------------------------------------------------------------------------------------
  // Hash table

  static long hash(long w0, long w1, long w2, long w3) {
    // Digests are uniform, but keys made with DedupKey.ofWords in tests may not be: mix all words
    // and take the high bits of a Fibonacci product.
    return (w0 ^ Long.rotateLeft(w1, 17) ^ Long.rotateLeft(w2, 31) ^ Long.rotateLeft(w3, 47))
        * 0x9E37_79B9_7F4A_7C15L;
  }

  private long hashOf(int s) {
    long[] l = longPages[s >>> PAGE_SHIFT];
    int b = (s & PAGE_MASK) * LONGS;
    return hash(l[b + W0], l[b + W1], l[b + W2], l[b + W3]);
  }

  private int find(long h, long w0, long w1, long w2, long w3) {
    int[] table = buckets;
    int s = table[bucketOf(h, table.length)];
    while (s != 0) {
      long[] l = longPages[s >>> PAGE_SHIFT];
      int b = (s & PAGE_MASK) * LONGS;
      if (l[b + W0] == w0 && l[b + W1] == w1 && l[b + W2] == w2 && l[b + W3] == w3) {
        return s;
      }
      s = intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + CHAIN] & CHAIN_MASK;
    }
    return 0;
  }

  private int chain(int s) {
    return intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + CHAIN] & CHAIN_MASK;
  }

  private void setChain(int s, int next) {
    int[] p = intPages[s >>> PAGE_SHIFT];
    int i = (s & PAGE_MASK) * INTS + CHAIN;
    p[i] = (p[i] & COMMITTED_BIT) | next;
  }

  private void unlinkChain(int s, long h) {
    int bucket = bucketOf(h, buckets.length);
    int cur = buckets[bucket];
    if (cur == s) {
      buckets[bucket] = chain(s);
      return;
    }
    int after = chain(cur);
    while (after != s) {
      cur = after;
      after = chain(cur);
    }
    setChain(cur, chain(s));
  }

  /** Re-points whoever links to slot {@code from} (its chain predecessor) at slot {@code to}. */
  private void repointChain(int from, int to, long h) {
    int bucket = bucketOf(h, buckets.length);
    int cur = buckets[bucket];
    if (cur == from) {
      buckets[bucket] = to;
      return;
    }
    int after = chain(cur);
    while (after != from) {
      cur = after;
      after = chain(cur);
    }
    setChain(cur, to);
  }

  /** Maps the high 32 bits of a hash onto {@code [0, length)} (Lemire's multiply-shift). */
  private static int bucketOf(long h, int length) {
    return (int) (((h >>> 32) * length) >>> 32);
  }

  private void rehash(int length) {
    int[] table = new int[length];
    for (int s = FIRST, end = FIRST + count; s < end; s++) {
      int bucket = bucketOf(hashOf(s), length);
      setChain(s, table[bucket]);
      table[bucket] = s;
    }
    buckets = table;
  }

  // ---------------------------------------------------------------------------------------------
  // Recency lists

  // A list's ends are the links of its sentinel (slot COMMITTED or IN_FLIGHT), kept in fields
  // next to the lock word rather than in the first int page: every operation writes them, so in
  // the page they would be one more cache line moving between the cores of threads that share the
  // stripe (and one shared with the links of slots 2 to 4).

  private int next(int s) {
    if (s < FIRST) {
      return s == COMMITTED ? committedFirst : inFlightFirst;
    }
    return intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + NEXT];
  }

  private int prev(int s) {
    if (s < FIRST) {
      return s == COMMITTED ? committedLast : inFlightLast;
    }
    return intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + PREV];
  }

  private void setNext(int s, int next) {
    if (s >= FIRST) {
      intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + NEXT] = next;
    } else if (s == COMMITTED) {
      committedFirst = next;
    } else {
      inFlightFirst = next;
    }
  }

  private void setPrev(int s, int prev) {
    if (s >= FIRST) {
      intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + PREV] = prev;
    } else if (s == COMMITTED) {
      committedLast = prev;
    } else {
      inFlightLast = prev;
    }
  }

  private void linkTail(int s, int list) {
    int tail = prev(list);
    int[] sp = intPages[s >>> PAGE_SHIFT];
    int si = (s & PAGE_MASK) * INTS;
    sp[si + PREV] = tail;
    sp[si + NEXT] = list;
    setNext(tail, s);
    setPrev(list, s);
  }

  private void unlinkRecency(int s) {
    int[] sp = intPages[s >>> PAGE_SHIFT];
    int si = (s & PAGE_MASK) * INTS;
    int prev = sp[si + PREV];
    int next = sp[si + NEXT];
    setNext(prev, next);
    setPrev(next, prev);
  }

  private void moveToTail(int s, int list) {
    if (prev(list) != s) {
      unlinkRecency(s);
      linkTail(s, list);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Slot fields

  private long deadline(int s) {
    return longPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * LONGS + DEADLINE];
  }

  private boolean isCommitted(int s) {
    return intPages[s >>> PAGE_SHIFT][(s & PAGE_MASK) * INTS + CHAIN] < 0;
  }

  private void setCommitted(int s, boolean committed) {
    int[] p = intPages[s >>> PAGE_SHIFT];
    int i = (s & PAGE_MASK) * INTS + CHAIN;
    p[i] = committed ? p[i] | COMMITTED_BIT : p[i] & CHAIN_MASK;
  }

  private @Nullable Object extra(int s) {
    Object[][] ep = extraPages;
    if (ep == null) {
      return null;
    }
    Object[] page = ep[s >>> PAGE_SHIFT];
    return page == null ? null : page[s & PAGE_MASK];
  }

  private void setExtra(int s, @Nullable Object value) {
    Object[][] ep = extraPages;
    int p = s >>> PAGE_SHIFT;
    if (value == null) {
      if (ep != null && ep[p] != null) {
        ep[p][s & PAGE_MASK] = null;
      }
      return;
    }
    if (ep == null) {
      ep = new Object[longPages.length][];
      extraPages = ep;
    }
    Object[] page = ep[p];
    if (page == null) {
      page = new Object[p == 0 ? longPages[0].length / LONGS : PAGE_SIZE];
      ep[p] = page;
    }
    page[s & PAGE_MASK] = value;
  }

  /** A fingerprint and a result, for entries that have both. */
  private record FingerprintAndResult(Fingerprint fingerprint, byte[] result) {}

  private static @Nullable Object combine(@Nullable Fingerprint fp, byte @Nullable [] result) {
    if (fp == null) {
      return result;
    }
    return result == null ? fp : new FingerprintAndResult(fp, result);
  }

  private static @Nullable Fingerprint fingerprintOf(@Nullable Object extra) {
    if (extra instanceof Fingerprint f) {
      return f;
    }
    return extra instanceof FingerprintAndResult fr ? fr.fingerprint() : null;
  }

  private static byte @Nullable [] resultOf(@Nullable Object extra) {
    if (extra instanceof byte[] r) {
      return r;
    }
    return extra instanceof FingerprintAndResult fr ? fr.result() : null;
  }

  // ---------------------------------------------------------------------------------------------
  // Slot allocation, removal, compaction

  /** Detaches a slot from its chain and list and drops its extras; it stays counted. */
  private int detach(int s) {
    unlinkChain(s, hashOf(s));
    unlinkRecency(s);
    setExtra(s, null);
    return s;
  }

  /** Removes an entry, moving the last slot into its place so slots stay dense. */
  private void remove(int s, long h, boolean shrink) {
    unlinkChain(s, h);
    unlinkRecency(s);
    int last = FIRST + count - 1;
    if (s != last) {
      long[] from = longPages[last >>> PAGE_SHIFT];
      int fb = (last & PAGE_MASK) * LONGS;
      System.arraycopy(from, fb, longPages[s >>> PAGE_SHIFT], (s & PAGE_MASK) * LONGS, LONGS);
      int[] fi = intPages[last >>> PAGE_SHIFT];
      int fib = (last & PAGE_MASK) * INTS;
      System.arraycopy(fi, fib, intPages[s >>> PAGE_SHIFT], (s & PAGE_MASK) * INTS, INTS);
      setExtra(s, extra(last));
      repointChain(last, s, hashOf(s));
      int[] sp = intPages[s >>> PAGE_SHIFT];
      int si = (s & PAGE_MASK) * INTS;
      setNext(sp[si + PREV], s);
      setPrev(sp[si + NEXT], s);
    }
    setExtra(last, null);
    count--;
    if (shrink) {
      shrink();
    }
  }

  /** Makes sure slot {@code s} (at most one past the last slot in use) exists. */
  private void ensureSlot(int s) {
    if (s < capacity) {
      return;
    }
    int p = s >>> PAGE_SHIFT;
    if (p == 0) {
      resizeFirstPage(Math.min(PAGE_SIZE, capacity << 1));
      return;
    }
    if (p >= longPages.length) {
      int n = longPages.length << 1;
      longPages = Arrays.copyOf(longPages, n);
      intPages = Arrays.copyOf(intPages, n);
      if (extraPages != null) {
        extraPages = Arrays.copyOf(extraPages, n);
      }
    }
    longPages[p] = new long[PAGE_SIZE * LONGS];
    intPages[p] = new int[PAGE_SIZE * INTS];
    pages = p + 1;
    capacity = pages * PAGE_SIZE;
  }

  private void resizeFirstPage(int slots) {
    longPages[0] = Arrays.copyOf(longPages[0], slots * LONGS);
    intPages[0] = Arrays.copyOf(intPages[0], slots * INTS);
    if (extraPages != null && extraPages[0] != null) {
      extraPages[0] = Arrays.copyOf(extraPages[0], slots);
    }
    capacity = slots;
  }

  /** Gives memory back as the segment empties: trailing pages, the first page, the buckets. */
  private void shrink() {
    if (count == 0) {
      if (capacity > INITIAL_SLOTS || buckets.length > MIN_BUCKETS) {
        reset();
      }
      return;
    }
    int used = FIRST + count;
    // Pages up to the last one in use stay, and one spare page after it while the last page is
    // more than half full: a scope hovering around a page boundary must move by half a page
    // before a page is allocated or freed again.
    int last = (used - 1) >>> PAGE_SHIFT;
    int keep = ((used - 1) & PAGE_MASK) >= PAGE_SIZE / 2 ? last + 2 : last + 1;
    if (pages > keep) {
      for (int p = keep; p < pages; p++) {
        longPages[p] = null;
        intPages[p] = null;
        if (extraPages != null) {
          extraPages[p] = null;
        }
      }
      pages = keep;
      capacity = pages * PAGE_SIZE;
    }
    if (pages == 1 && capacity > INITIAL_SLOTS && used < capacity >>> 2) {
      resizeFirstPage(capacity >>> 1);
    }
    if (buckets.length > MIN_BUCKETS && count < buckets.length >>> 3) {
      rehash(((buckets.length + 4) >>> 1) - 4);
    }
  }

  private void reset() {
    longPages = new long[4][];
    intPages = new int[4][];
    extraPages = null;
    longPages[0] = new long[INITIAL_SLOTS * LONGS];
    intPages[0] = new int[INITIAL_SLOTS * INTS];
    pages = 1;
    capacity = INITIAL_SLOTS;
    committedFirst = COMMITTED;
    committedLast = COMMITTED;
    inFlightFirst = IN_FLIGHT;
    inFlightLast = IN_FLIGHT;
    buckets = new int[MIN_BUCKETS];
    count = 0;
    committedFloor = Long.MAX_VALUE;
    inFlightFloor = Long.MAX_VALUE;
  }
}
