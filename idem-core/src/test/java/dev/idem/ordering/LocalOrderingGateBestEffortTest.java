package dev.idem.ordering;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ManualTimeSource;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LocalOrderingGateBestEffortTest {
  private static final Duration TTL = Duration.ofSeconds(30);

  private final ManualTimeSource time = new ManualTimeSource();
  private final RecordingListener listener = new RecordingListener();
  private final LocalOrderingGate gate =
      LocalOrderingGate.builder(
              OrderingConfig.custom().mode(OrderingMode.BEST_EFFORT).lockTtl(TTL).build())
          .timeSource(time)
          .listener(listener)
          .build();

  @AfterEach
  void closeGate() {
    gate.close();
  }

  @Test
  void aFreeKeyIsTakenExclusively() throws Exception {
    // when
    Permit permit = gate.acquire("sku-1");

    // then
    assertThat(permit.exclusive()).isTrue();
    assertThat(permit.held()).isTrue();
    permit.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void aBusyKeyIsPassedAtOnceWithoutTheLock() throws Exception {
    // given a holder on this very thread: a gate that waited here would never return
    Permit holder = gate.acquire("sku-1");

    // when
    Permit proceeded = gate.acquire("sku-1");
    CompletableFuture<Permit> async = gate.acquireAsync("sku-1");

    // then
    assertThat(proceeded.exclusive()).isFalse();
    assertThat(proceeded.held()).isFalse();
    assertThat(proceeded.orderingKey()).isEqualTo("sku-1");
    assertThat(proceeded).hasToString("Permit[sku-1, not exclusive]");
    assertThat(async).isDone();
    assertThat(async.join().exclusive()).isFalse();
    assertThat(gate.queued("sku-1")).isZero();

    // and closing the lockless permits does not release the holder's lock
    proceeded.close();
    async.join().close();
    assertThat(holder.held()).isTrue();
    assertThat(gate.acquire("sku-1").exclusive()).isFalse();

    // when the holder releases, the next event takes the lock again
    holder.close();
    Permit next = gate.acquire("sku-1");
    assertThat(next.exclusive()).isTrue();
    next.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void anInterruptedThreadStillProceedsBecauseNothingWaits() throws Exception {
    // given
    Permit holder = gate.acquire("sku-1");
    Thread.currentThread().interrupt();

    // when
    Permit proceeded;
    try {
      proceeded = gate.acquire("sku-1");
    } finally {
      Thread.interrupted();
    }

    // then
    assertThat(proceeded.exclusive()).isFalse();
    holder.close();
  }

  @Test
  void aHolderPastLockTtlLosesTheLockToTheNextArrival() throws Exception {
    // given
    Permit stuck = gate.acquire("sku-1");
    time.advance(TTL);

    // when
    Permit next = gate.acquire("sku-1");

    // then
    assertThat(next.exclusive()).isTrue();
    assertThat(stuck.held()).isFalse();
    assertThat(listener.events).containsExactly("expired sku-1 PT30S");

    // and the late release leaves the new holder's lock alone
    stuck.close();
    assertThat(next.held()).isTrue();
    assertThat(gate.acquire("sku-1").exclusive()).isFalse();
    next.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void atMostOneExclusivePermitPerKeyUnderManyThreadsAndNothingEverQueues() throws Exception {
    // given
    AtomicInteger exclusiveInside = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger exclusive = new AtomicInteger();
    AtomicInteger lockless = new AtomicInteger();
    TestThreads threads = new TestThreads();

    // when
    for (int t = 0; t < 6; t++) {
      threads.start(
          "worker-" + t,
          () -> {
            for (int i = 0; i < 500; i++) {
              try (Permit p = gate.acquire("hot")) {
                if (p.exclusive()) {
                  exclusive.incrementAndGet();
                  if (exclusiveInside.incrementAndGet() != 1) {
                    overlaps.incrementAndGet();
                  }
                  Thread.yield();
                  exclusiveInside.decrementAndGet();
                } else {
                  lockless.incrementAndGet();
                }
                if (gate.queued("hot") != 0) {
                  overlaps.incrementAndGet();
                }
              }
            }
          });
    }
    threads.joinAll();

    // then
    assertThat(overlaps).hasValue(0);
    assertThat(exclusive.get() + lockless.get()).isEqualTo(6 * 500);
    assertThat(exclusive.get()).isPositive();
    assertThat(gate.activeKeys()).isZero();
  }
}
