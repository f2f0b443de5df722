package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.key.KeyEncoding;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A reservation of a deduplicator over the memory store is claimed under its key's lock in the
 * store instead of by a compare-and-set of its own: these tests pin that it is still single use,
 * also when two threads settle it at once.
 */
class FastPathClaimTest {
  private static final Scope SCOPE = Scope.of("claims");
  private final MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(4_096).build();
  private final Deduplicator dedup = Deduplicator.builder(store, SCOPE).build();
  private final ExecutorService pool = Executors.newFixedThreadPool(2);

  @AfterEach
  void tearDown() {
    pool.shutdownNow();
    store.close();
  }

  private Reservation reserve(String key) {
    Decision d = dedup.reserve(KeyEncoding.ofString(key));
    assertThat(d).isInstanceOf(Decision.Acquired.class);
    return ((Decision.Acquired) d).reservation();
  }

  @Test
  void aSecondCommitOrReleaseAfterACommitThrowsAndChangesNothing() {
    Reservation r = reserve("a");
    assertThat(r.commit()).isEqualTo(Settlement.COMMITTED);
    assertThatThrownBy(r::commit)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(r.key().toHex());
    assertThatThrownBy(r::release).isInstanceOf(ReservationSettledException.class);
    assertThat(r.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.inspect(r.key())).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aCommitAfterAReleaseThrowsAndLeavesTheKeyFree() {
    Reservation r = reserve("b");
    assertThat(r.release()).isEqualTo(Settlement.RELEASED);
    assertThatThrownBy(r::commit).isInstanceOf(ReservationSettledException.class);
    assertThat(r.settlement()).isEqualTo(Settlement.RELEASED);
    assertThat(dedup.inspect(r.key())).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void aCommitThatFailsOnAClosedStoreLeavesTheReservationOpen() {
    Reservation r = reserve("c");
    store.close();
    assertThatThrownBy(r::commit).isInstanceOf(IllegalStateException.class);
    assertThat(r.settlement()).isNull();
  }

  @Test
  void twoThreadsCommittingOneReservationSettleItExactlyOnce() throws Exception {
    race(r -> r.commit(), r -> r.commit());
  }

  @Test
  void aCommitAndAReleaseRacingSettleItExactlyOnceAndTheStoreAgrees() throws Exception {
    race(r -> r.commit(), r -> r.release());
  }

  @Test
  void aCommitRacingABatchCommitSettleItExactlyOnce() throws Exception {
    race(r -> r.commit(), r -> dedup.commitAll(List.of(r)).get(0));
  }

  /** Many rounds of two settlements of one fresh reservation started at the same moment. */
  private void race(
      Function<Reservation, Settlement> first, Function<Reservation, Settlement> second)
      throws Exception {
    CyclicBarrier start = new CyclicBarrier(2);
    for (int round = 0; round < 2_000; round++) {
      Reservation r = reserve("race-" + round);
      List<Future<Settlement>> both = new ArrayList<>();
      for (Function<Reservation, Settlement> settle : List.of(first, second)) {
        both.add(
            pool.submit(
                () -> {
                  start.await();
                  try {
                    return settle.apply(r);
                  } catch (ReservationSettledException e) {
                    return null;
                  }
                }));
      }
      Settlement a = both.get(0).get();
      Settlement b = both.get(1).get();
      assertThat(a == null ^ b == null).as("exactly one settlement in round %d", round).isTrue();
      Settlement won = a != null ? a : b;
      assertThat(r.settlement()).isEqualTo(won);
      KeyState state = dedup.inspect(r.key());
      if (won == Settlement.COMMITTED) {
        assertThat(state).isInstanceOf(KeyState.Committed.class);
      } else {
        assertThat(won).isEqualTo(Settlement.RELEASED);
        assertThat(state).isEqualTo(KeyState.ABSENT);
      }
    }
  }
}
