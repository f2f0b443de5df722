package dev.idem.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** maxKeys, strict LRU per scope, and what the listener hears about it. */
class MemoryDedupStoreEvictionTest {
  static final Scope SCOPE = Scope.of("orders");
  static final Scope OTHER = Scope.of("payments");
  static final long LEASE = 1_000;
  static final Ttl HOUR = new Ttl(3_600_000, Expiry.SLIDING);

  final ManualTimeSource clock = new ManualTimeSource();
  final List<String> events = new ArrayList<>();
  final DedupListener recorder =
      new DedupListener() {
        @Override
        public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
          events.add("evicted " + name(key) + " beforeTtl=" + beforeTtl);
        }

        @Override
        public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
          events.add("expired " + name(key) + " lease=" + leaseExpired);
        }
      };
  long token;

  MemoryDedupStore store(int maxKeys) {
    return MemoryDedupStore.builder().maxKeysPerScope(maxKeys).listener(recorder).build();
  }

  static DedupKey key(String name) {
    return DedupKey.ofWords(name.hashCode(), name.length(), 0x1de0, name.charAt(0));
  }

  static String name(DedupKey key) {
    return String.valueOf((char) key.word(3)) + (key.word(1) > 1 ? "…" : "");
  }

  ReserveResult reserve(MemoryDedupStore s, Scope scope, String name, Ttl ttl) {
    return s.reserve(new ReserveRequest(scope, key(name), null, ++token, now(), LEASE, ttl));
  }

  /** Reserves and commits: the key is used (most recently) by both steps. */
  void seen(MemoryDedupStore s, Scope scope, String name, Ttl ttl) {
    ReserveResult r = reserve(s, scope, name, ttl);
    assertThat(r).isInstanceOf(ReserveResult.Acquired.class);
    s.commit(new CommitRequest(scope, key(name), token, now(), ttl, null));
  }

  void seen(MemoryDedupStore s, String... names) {
    for (String n : names) {
      seen(s, SCOPE, n, HOUR);
    }
  }

  boolean present(MemoryDedupStore s, Scope scope, String name) {
    return !(s.inspect(scope, key(name), now()) instanceof KeyState.Absent);
  }

  List<String> present(MemoryDedupStore s, String... names) {
    List<String> out = new ArrayList<>();
    for (String n : names) {
      if (present(s, SCOPE, n)) {
        out.add(n);
      }
    }
    return out;
  }

  long now() {
    return clock.wallMillis();
  }

  @Test
  void aNewKeyInAFullScopeEvictsTheLeastRecentlyUsedCommittedKey() {
    MemoryDedupStore s = store(3);
    seen(s, "a", "b", "c");

    seen(s, "d");

    assertThat(present(s, "a", "b", "c", "d")).containsExactly("b", "c", "d");
    assertThat(events).containsExactly("evicted a beforeTtl=true");
    assertThat(s.size(SCOPE)).isEqualTo(3);
  }

  @Test
  void aDuplicateHitIsAUse() {
    MemoryDedupStore s = store(3);
    seen(s, "a", "b", "c");
    clock.advanceMillis(1);

    assertThat(reserve(s, SCOPE, "a", HOUR)).isInstanceOf(ReserveResult.Duplicate.class);
    seen(s, "d");
    seen(s, "e");

    assertThat(present(s, "a", "b", "c", "d", "e")).containsExactly("a", "d", "e");
    assertThat(events).containsExactly("evicted b beforeTtl=true", "evicted c beforeTtl=true");
  }

  @Test
  void recencyFollowsCommitsNotReservations() {
    MemoryDedupStore s = store(3);
    reserve(s, SCOPE, "a", HOUR);
    long tokenA = token;
    reserve(s, SCOPE, "b", HOUR);
    long tokenB = token;
    s.commit(new CommitRequest(SCOPE, key("b"), tokenB, now(), HOUR, null));
    s.commit(new CommitRequest(SCOPE, key("a"), tokenA, now(), HOUR, null));
    seen(s, "c");

    seen(s, "d");

    assertThat(present(s, "a", "b", "c", "d")).containsExactly("a", "c", "d");
  }

  @Test
  void inspectionsAndConflictsAreNotUses() {
    MemoryDedupStore s = store(2);
    Fingerprint first = Fingerprint.sha256(new byte[] {1});
    s.reserve(new ReserveRequest(SCOPE, key("a"), first, ++token, now(), LEASE, HOUR));
    s.commit(new CommitRequest(SCOPE, key("a"), token, now(), HOUR, null));
    seen(s, "b");
    s.inspect(SCOPE, key("a"), now());
    Fingerprint other = Fingerprint.sha256(new byte[] {2});
    assertThat(s.reserve(new ReserveRequest(SCOPE, key("a"), other, 99, now(), LEASE, HOUR)))
        .isInstanceOf(ReserveResult.Conflict.class);

    seen(s, "c");

    assertThat(present(s, "a", "b", "c")).containsExactly("b", "c");
  }

  @Test
  void anEvictedKeyPassesAsNewAgain() {
    MemoryDedupStore s = store(1);
    seen(s, "a");
    seen(s, "b");

    assertThat(reserve(s, SCOPE, "a", HOUR))
        .isInstanceOfSatisfying(
            ReserveResult.Acquired.class,
            a -> assertThat(a.replaced()).isEqualTo(ReserveResult.Replaced.NOTHING));
  }

  @Test
  void anExpiredLeastRecentlyUsedKeyIsReportedAsEvictedAfterItsTtl() {
    MemoryDedupStore s = store(2);
    Ttl shortTtl = new Ttl(100, Expiry.SLIDING);
    seen(s, SCOPE, "a", shortTtl);
    seen(s, SCOPE, "b", HOUR);
    clock.advanceMillis(100);

    seen(s, "c");

    assertThat(events).containsExactly("evicted a beforeTtl=false");
    assertThat(present(s, "a", "b", "c")).containsExactly("b", "c");
  }

  @Test
  void keysWithoutATtlAreEvictedWithoutTheWindowWarning() {
    MemoryDedupStore s = store(1);
    seen(s, SCOPE, "a", Ttl.NONE);

    seen(s, SCOPE, "b", Ttl.NONE);

    assertThat(events).containsExactly("evicted a beforeTtl=false");
  }

  @Test
  void anExpiredKeyAnywhereIsRemovedBeforeALiveOne() {
    MemoryDedupStore s = store(3);
    Ttl fixed = new Ttl(100, Expiry.FIXED);
    seen(s, SCOPE, "a", HOUR);
    seen(s, SCOPE, "b", fixed);
    seen(s, SCOPE, "c", HOUR);
    clock.advanceMillis(50);
    // b becomes the most recently used, but its fixed window still ends at 100.
    assertThat(reserve(s, SCOPE, "b", fixed)).isInstanceOf(ReserveResult.Duplicate.class);
    clock.advanceMillis(50);

    seen(s, "d");

    assertThat(present(s, "a", "b", "c", "d")).containsExactly("a", "c", "d");
    assertThat(events).containsExactly("expired b lease=false");
  }

  @Test
  void aReservationWhoseLeaseRanOutIsReclaimedAndReported() {
    MemoryDedupStore s = store(2);
    reserve(s, SCOPE, "a", HOUR);
    seen(s, "b");
    clock.advanceMillis(LEASE);

    seen(s, "c");

    assertThat(present(s, "a", "b", "c")).containsExactly("b", "c");
    assertThat(events).containsExactly("expired a lease=true");
  }

  @Test
  void aLiveReservationIsNeverEvicted() {
    MemoryDedupStore s = store(2);
    reserve(s, SCOPE, "a", HOUR);
    seen(s, "b");

    seen(s, "c");

    assertThat(present(s, "a", "b", "c")).containsExactly("a", "c");
    assertThat(s.inspect(SCOPE, key("a"), now())).isInstanceOf(KeyState.InFlight.class);
    assertThat(events).containsExactly("evicted b beforeTtl=true");
  }

  @Test
  void aScopeFullOfLiveReservationsRefusesNewKeysAndChangesNothing() {
    MemoryDedupStore s = store(2);
    reserve(s, SCOPE, "a", HOUR);
    reserve(s, SCOPE, "b", HOUR);

    assertThatThrownBy(() -> reserve(s, SCOPE, "c", HOUR))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("orders/dedup is full")
        .hasMessageContaining("all of its 2 keys are in flight")
        .hasMessageContaining("Raise maxKeys");
    assertThat(present(s, "a", "b", "c")).containsExactly("a", "b");
    assertThat(reserve(s, SCOPE, "a", HOUR)).isInstanceOf(ReserveResult.InFlight.class);

    s.release(new ReleaseRequest(SCOPE, key("b"), token - 2, now()));
    assertThat(present(s, "a", "b")).containsExactly("a");
    assertThat(reserve(s, SCOPE, "c", HOUR)).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(events).isEmpty();
  }

  @Test
  void scopesAreBoundedIndependently() {
    MemoryDedupStore s =
        MemoryDedupStore.builder().maxKeysPerScope(3).maxKeys(OTHER, 1).listener(recorder).build();
    seen(s, "a", "b", "c");
    seen(s, OTHER, "x", HOUR);

    seen(s, OTHER, "y", HOUR);

    assertThat(present(s, "a", "b", "c")).containsExactly("a", "b", "c");
    assertThat(present(s, OTHER, "x")).isFalse();
    assertThat(present(s, OTHER, "y")).isTrue();
    assertThat(s.size(SCOPE)).isEqualTo(3);
    assertThat(s.size(OTHER)).isEqualTo(1);
  }

  @Test
  void theBoundCountsReservationsAndCommittedKeysTogether() {
    MemoryDedupStore s = store(3);
    seen(s, "a", "b");
    reserve(s, SCOPE, "c", HOUR);

    reserve(s, SCOPE, "d", HOUR);

    assertThat(present(s, "a", "b", "c", "d")).containsExactly("b", "c", "d");
    assertThat(s.size(SCOPE)).isEqualTo(3);
  }

  @Test
  void memoryGrowsWithTheKeysAndIsGivenBackAsTheyLeave() {
    // One stripe, so the figures below are one segment's pages and table.
    MemoryDedupStore s = MemoryDedupStore.builder().maxKeysPerScope(100_000).maxStripes(1).build();
    int[] empty = {16, 12};
    List<Long> tokens = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      DedupKey k = DedupKey.ofWords(i, i * 31L, 7, 9);
      s.reserve(new ReserveRequest(SCOPE, k, null, i + 1, now(), LEASE, HOUR));
      tokens.add((long) i + 1);
      if (i % 2 == 0) {
        s.commit(new CommitRequest(SCOPE, k, i + 1, now(), HOUR, new byte[] {(byte) i}));
      }
    }
    int[] full = s.footprint(SCOPE);
    s.verify(SCOPE);

    for (int i = 0; i < 20_000; i++) {
      DedupKey k = DedupKey.ofWords(i, i * 31L, 7, 9);
      if (i % 2 == 0) {
        assertThat(s.forget(SCOPE, k)).isTrue();
      } else {
        s.release(new ReleaseRequest(SCOPE, k, tokens.get(i), now()));
      }
      if (i % 997 == 0) {
        s.verify(SCOPE);
      }
    }

    // 20,002 slots (two are the recency lists' sentinels) in whole pages; the bucket table is the
    // first 2^k - 4 at or above twice the key count (load factor at most 1/2).
    assertThat(full[0])
        .isEqualTo((20_002 + Segment.PAGE_SIZE - 1) / Segment.PAGE_SIZE * Segment.PAGE_SIZE);
    assertThat(full[1]).isEqualTo(65_532);
    assertThat(s.size(SCOPE)).isZero();
    assertThat(s.footprint(SCOPE)).containsExactly(empty);
    s.verify(SCOPE);
  }
}
