package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksIterator;

/**
 * Regression: a sliding refresh moves a key's deadline; a sweep that then reaches the key's old
 * deadline must not delete the (live) key. The index keeps the key under its deadline rounded down
 * to a whole second (a refresh within that second leaves the index alone, one that leaves it moves
 * the index entry in the same batch), and the sweeper re-checks the stored deadline under the key's
 * lock.
 */
class SlidingRefreshThenSweepKeepsLiveKeyTest {
  @TempDir Path dir;

  @Test
  void aSweepAtTheOldDeadlineKeepsAKeyWhoseSlidingWindowWasRefreshed() throws Exception {
    // given: a key committed at t0 with a 10 s sliding window, hit again at t0 + 8 s
    ManualTimeSource clock = new ManualTimeSource();
    Ttl sliding = new Ttl(10_000, Expiry.SLIDING);
    DedupKey k = key("webhook-42");
    long t0 = clock.wallMillis();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).timeSource(clock).build()) {
      long t = token();
      store.reserve(reserve(ORDERS, k, t, t0, sliding, null));
      store.commit(commit(ORDERS, k, t, t0, sliding, null));
      assertThat(store.reserve(reserve(ORDERS, k, token(), t0 + 8_000, sliding, null)))
          .isEqualTo(new ReserveResult.Duplicate(t0, t0 + 18_000, null));

      // when: a sweep runs after the old deadline (t0 + 10 s) but before the new one
      long swept = store.sweepExpired(t0 + 12_000);

      // then: nothing removed, the key is still a duplicate, no index entry is left at the old
      // deadline, and the key does expire at its new deadline
      assertThat(swept).isZero();
      assertThat(store.inspect(ORDERS, k, t0 + 12_000)).isInstanceOf(KeyState.Committed.class);
      assertThat(store.reserve(reserve(ORDERS, k, token(), t0 + 12_000, sliding, null)))
          .isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(store.sweepExpired(t0 + 21_999)).isZero();
      assertThat(store.sweepExpired(t0 + 22_000)).isEqualTo(1);
      assertThat(store.inspect(ORDERS, k, t0 + 22_000)).isEqualTo(KeyState.ABSENT);
    }
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isZero();
  }

  @Test
  void aRefreshLeavesExactlyOneIndexEntryPerKey() throws Exception {
    // given
    ManualTimeSource clock = new ManualTimeSource();
    Ttl sliding = new Ttl(10_000, Expiry.SLIDING);
    long t0 = clock.wallMillis();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).timeSource(clock).build()) {
      long t = token();
      store.reserve(reserve(ORDERS, key("k"), t, t0, sliding, null));
      store.commit(commit(ORDERS, key("k"), t, t0, sliding, null));

      // when: many hits, each moving the deadline
      for (int i = 1; i <= 50; i++) {
        store.reserve(reserve(ORDERS, key("k"), token(), t0 + i * 100L, sliding, null));
      }
    }

    // then
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isEqualTo(1);
  }

  @Test
  void theIndexHoldsAKeyUnderItsDeadlineRoundedDownToAWholeSecondAndMovesOnlyWhenThatChanges()
      throws Exception {
    // given: a key committed 200 ms into a second with a 10 s sliding window (deadline x.200)
    Ttl sliding = new Ttl(10_000, Expiry.SLIDING);
    DedupKey k = key("granule");
    long t0 = 1_700_000_000_200L;
    ScopeKeys sk = new ScopeKeys(ORDERS);
    List<Long> afterSameSecondHit;
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).build()) {
      long t = token();
      store.reserve(reserve(ORDERS, k, t, t0, sliding, null));
      store.commit(commit(ORDERS, k, t, t0, sliding, null));

      // when: a hit that keeps the deadline in the same second (x.500), then one that moves it
      // into the next (x+1.100)
      store.reserve(reserve(ORDERS, k, token(), t0 + 300, sliding, null));
      store.close();
      afterSameSecondHit = indexDeadlines(sk);
    }
    List<Long> afterNextSecondHit;
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).build()) {
      assertThat(store.reserve(reserve(ORDERS, k, token(), t0 + 900, sliding, null)))
          .isEqualTo(new ReserveResult.Duplicate(t0, t0 + 10_900, null));
      store.close();
      afterNextSecondHit = indexDeadlines(sk);
    }

    // then: one index key, at the deadline's whole second, moved only by the second hit; and the
    // sweeper keeps the key until its exact deadline
    assertThat(afterSameSecondHit).containsExactly(t0 - 200 + 10_000);
    assertThat(afterNextSecondHit).containsExactly(t0 - 200 + 11_000);
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).build()) {
      assertThat(store.sweepExpired(t0 + 10_899)).isZero();
      assertThat(store.inspect(ORDERS, k, t0 + 10_899)).isInstanceOf(KeyState.Committed.class);
      assertThat(store.sweepExpired(t0 + 10_900)).isEqualTo(1);
    }
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
  }

  private List<Long> indexDeadlines(ScopeKeys sk) throws Exception {
    return RawDb.withFamily(
        dir,
        Handles.CF_EXPIRY,
        (db, handle) -> {
          List<Long> out = new ArrayList<>();
          try (RocksIterator it = db.newIterator(handle)) {
            for (it.seek(sk.prefix); it.isValid() && sk.owns(it.key()); it.next()) {
              out.add(sk.indexDeadline(it.key()));
            }
          }
          return out;
        });
  }
}
