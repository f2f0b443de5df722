package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.KeyState;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A parent key committed after every child succeeded, released at the first failure. */
class FanOutTest {
  private static final Scope SCOPE = Scope.of("orders", "split");

  private final ManualTimeSource time = new ManualTimeSource();
  private final FlakyStore store = new FlakyStore();
  private final Deduplicator dedup = Deduplicator.builder(store, SCOPE).timeSource(time).build();
  private int keys;

  private Reservation acquire() {
    keys++;
    return ((Decision.Acquired) dedup.reserve(DedupKey.ofWords(keys, 0, 0, 1))).reservation();
  }

  @Test
  void theParentIsCommittedByTheLastSuccessOnly() {
    Reservation parent = acquire();
    FanOut fanOut = parent.fanOut(3);
    List<FanOut.Child> children = List.of(fanOut.child(), fanOut.child(), fanOut.child());

    children.get(0).succeeded();
    children.get(2).succeeded();
    assertThat(fanOut.isSettled()).isFalse();
    assertThat(parent.settlement()).isNull();
    assertThat(dedup.inspect(parent.key())).isInstanceOf(KeyState.InFlight.class);

    children.get(1).succeeded();
    assertThat(fanOut.isSettled()).isTrue();
    assertThat(parent.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.inspect(parent.key())).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void theFirstFailureReleasesTheParentAndLaterReportsChangeNothing() {
    Reservation parent = acquire();
    FanOut fanOut = parent.fanOut(3);
    FanOut.Child a = fanOut.child();
    FanOut.Child b = fanOut.child();
    FanOut.Child c = fanOut.child();

    a.succeeded();
    b.failed();
    assertThat(parent.settlement()).isEqualTo(Settlement.RELEASED);
    assertThat(dedup.inspect(parent.key())).isEqualTo(KeyState.ABSENT);

    c.succeeded();
    assertThat(parent.settlement()).isEqualTo(Settlement.RELEASED);
    assertThat(dedup.inspect(parent.key())).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void aSingleChildSettlesTheParentDirectly() {
    Reservation parent = acquire();
    parent.fanOut(1).child().succeeded();

    assertThat(parent.settlement()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void eachChildReportsOnce() {
    FanOut fanOut = acquire().fanOut(2);
    FanOut.Child child = fanOut.child();
    child.succeeded();

    assertThatThrownBy(child::succeeded)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("reports once");
    assertThatThrownBy(child::failed).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void noMoreChildrenThanDeclared() {
    Reservation parent = acquire();
    FanOut fanOut = parent.fanOut(2);
    fanOut.child();
    fanOut.child();

    assertThatThrownBy(fanOut::child)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only 2 children")
        .hasMessageContaining(parent.key().toString());
  }

  @Test
  void aFanOutNeedsAtLeastOneChild() {
    Reservation parent = acquire();

    assertThatThrownBy(() -> parent.fanOut(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one child");
    assertThat(parent.settlement()).isNull();
  }

  @Test
  void childrenReportingFromManyThreadsCommitTheParentExactlyOnce() throws Exception {
    // given
    int n = 16;
    Reservation parent = acquire();
    FanOut fanOut = parent.fanOut(n);
    List<FanOut.Child> children = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      children.add(fanOut.child());
    }
    CyclicBarrier start = new CyclicBarrier(n);
    ExecutorService pool = Executors.newFixedThreadPool(n);

    // when all succeed at once
    try {
      List<Future<?>> done = new ArrayList<>();
      for (FanOut.Child c : children) {
        done.add(
            pool.submit(
                () -> {
                  start.await(10, TimeUnit.SECONDS);
                  c.succeeded();
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(10, TimeUnit.SECONDS); // a second commit would throw ReservationSettledException
      }
    } finally {
      pool.shutdownNow();
    }

    // then
    assertThat(parent.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(store.calls.stream().filter("commit"::equals)).hasSize(1);
  }

  @Test
  void whenTheFinalCommitFailsTheParentStaysOpenAndTheFanOutIsNotSettled() {
    // given a store that is down when the last child reports
    Reservation parent = acquire();
    FanOut fanOut = parent.fanOut(2);
    FanOut.Child a = fanOut.child();
    FanOut.Child b = fanOut.child();
    a.succeeded();
    store.commitsFail = true;

    // when
    assertThatThrownBy(b::succeeded).isInstanceOf(StoreUnavailableException.class);

    // then nothing was settled: the parent is open for a retry, and the fan-out says so
    assertThat(parent.settlement()).isNull();
    assertThat(fanOut.isSettled()).as("isSettled() after the parent's commit failed").isFalse();
    store.commitsFail = false;
    assertThat(parent.commit()).isEqualTo(Settlement.COMMITTED);
  }
}
