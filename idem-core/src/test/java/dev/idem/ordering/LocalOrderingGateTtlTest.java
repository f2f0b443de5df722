package dev.idem.ordering;

import static dev.idem.ordering.Eventually.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ManualTimeSource;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * lockTtl with a manual clock: the gate's own timer is real-time and the TTL a minute, so within a
 * test only {@link LocalOrderingGate#expireOverdue()} and arrivals apply it.
 */
@Timeout(60)
class LocalOrderingGateTtlTest {
  private static final Duration TTL = Duration.ofMinutes(1);

  private final ManualTimeSource time = new ManualTimeSource();
  private final RecordingListener listener = new RecordingListener();
  private final LocalOrderingGate gate =
      LocalOrderingGate.builder(OrderingConfig.custom().lockTtl(TTL).build())
          .timeSource(time)
          .listener(listener)
          .executor(Runnable::run)
          .build();

  @AfterEach
  void closeGate() {
    gate.close();
  }

  @Test
  void aHolderPastLockTtlIsOvertakenByTheNextWaiter() throws Exception {
    // given a holder that never releases, and two waiters
    Permit stuck = gate.acquire("k");
    CompletableFuture<Permit> second = gate.acquireAsync("k");
    CompletableFuture<Permit> third = gate.acquireAsync("k");

    // when its TTL runs out
    time.advance(TTL);
    int expired = gate.expireOverdue();

    // then the second is let through, the third still waits its turn
    assertThat(expired).isEqualTo(1);
    assertThat(second).isDone();
    assertThat(second.join().held()).isTrue();
    assertThat(stuck.held()).isFalse();
    assertThat(third).isNotDone();
    assertThat(listener.events).containsExactly("expired k PT1M");
  }

  @Test
  void aHolderWithinLockTtlKeepsItsTurn() throws Exception {
    // given
    Permit holder = gate.acquire("k");
    CompletableFuture<Permit> next = gate.acquireAsync("k");

    // when
    time.advance(TTL.minusMillis(1));

    // then
    assertThat(gate.expireOverdue()).isZero();
    assertThat(holder.held()).isTrue();
    assertThat(next).isNotDone();
    assertThat(listener.events).isEmpty();
  }

  @Test
  void theLateReleaseOfAnOvertakenHolderIsFencedOff() throws Exception {
    // given a holder overtaken by the second event, and a third waiting behind the second
    Permit late = gate.acquire("k");
    CompletableFuture<Permit> second = gate.acquireAsync("k");
    CompletableFuture<Permit> third = gate.acquireAsync("k");
    time.advance(TTL);
    gate.expireOverdue();
    time.advance(Duration.ofSeconds(5));

    // when the presumed-dead holder finally releases
    late.close();

    // then the second keeps its turn and the third keeps waiting
    assertThat(second.join().held()).isTrue();
    assertThat(third).isNotDone();
    assertThat(gate.queued("k")).isEqualTo(1);
    assertThat(listener.events).containsExactly("expired k PT1M", "late k PT1M5S");

    // and the turn moves on only when the second releases
    second.join().close();
    assertThat(third).isDone();
    third.join().close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void aBlockedWaiterIsLetThroughWhenTheHolderExpires() throws Exception {
    // given
    Permit stuck = gate.acquire("k");
    TestThreads threads = new TestThreads();
    TestThreads.Started waiter =
        threads.start(
            "waiter",
            () -> {
              try (Permit p = gate.acquire("k")) {
                assertThat(p.held()).isTrue();
              }
            });
    await().until(() -> gate.queued("k") == 1);

    // when
    time.advance(TTL);
    gate.expireOverdue();

    // then
    threads.joinAll();
    assertThat(waiter.failure.get()).isNull();
    stuck.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void anArrivalOvertakesAnExpiredHolderNobodyWaitedFor() throws Exception {
    // given
    Permit stuck = gate.acquire("k");
    time.advance(TTL.plusSeconds(1));

    // when
    Permit next = gate.acquire("k");

    // then
    assertThat(next.exclusive()).isTrue();
    assertThat(next.held()).isTrue();
    assertThat(stuck.held()).isFalse();
    assertThat(listener.events).containsExactly("expired k PT1M1S");

    // and the late release does not free the key under the new holder
    stuck.close();
    assertThat(next.held()).isTrue();
    assertThat(gate.acquireAsync("k")).isNotDone();
  }

  @Test
  void anArrivalLetsTheFirstWaiterPastAnExpiredHolderBeforeTheTimerDoes() throws Exception {
    // given a holder past its TTL whose waiter has not been let through yet
    Permit stuck = gate.acquire("k");
    CompletableFuture<Permit> first = gate.acquireAsync("k");
    time.advance(TTL);

    // when a new event arrives
    CompletableFuture<Permit> second = gate.acquireAsync("k");

    // then the earlier waiter gets the turn and the newcomer queues behind it
    assertThat(first).isDone();
    assertThat(second).isNotDone();
    first.join().close();
    assertThat(second).isDone();
    second.join().close();
    stuck.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void expiringALeakedPermitNobodyWaitsForForgetsTheKey() throws Exception {
    // given a permit that is never closed
    Permit leaked = gate.acquire("k");
    time.advance(TTL);

    // when
    assertThat(gate.expireOverdue()).isEqualTo(1);

    // then
    assertThat(gate.activeKeys()).isZero();
    assertThat(leaked.held()).isFalse();
    assertThat(listener.events).containsExactly("expired k PT1M");

    // and its late release changes nothing for the next holder
    Permit next = gate.acquire("k");
    leaked.close();
    assertThat(next.held()).isTrue();
    assertThat(gate.activeKeys()).isEqualTo(1);
    next.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void aReleaseAfterLockTtlThatNobodyTookOverStillFreesTheKeyAndIsReported() throws Exception {
    // given
    Permit slow = gate.acquire("k");
    time.advance(TTL.plusSeconds(2));

    // when
    slow.close();

    // then
    assertThat(gate.activeKeys()).isZero();
    assertThat(listener.events).containsExactly("late k PT1M2S");
  }

  @Test
  void aThrowingListenerDoesNotBreakTheTakeover() throws Exception {
    // given
    try (LocalOrderingGate fragile =
        LocalOrderingGate.builder(OrderingConfig.custom().lockTtl(TTL).build())
            .timeSource(time)
            .listener(
                new OrderingListener() {
                  @Override
                  public void onLockExpired(String key, Duration heldFor) {
                    throw new IllegalStateException("listener bug");
                  }

                  @Override
                  public void onLateRelease(String key, Duration heldFor) {
                    throw new IllegalStateException("listener bug");
                  }
                })
            .executor(Runnable::run)
            .build()) {
      Permit stuck = fragile.acquire("k");
      CompletableFuture<Permit> next = fragile.acquireAsync("k");
      time.advance(TTL);

      // when
      fragile.expireOverdue();
      stuck.close();

      // then
      assertThat(next).isDone();
      next.join().close();
      assertThat(fragile.activeKeys()).isZero();
    }
  }

  @Test
  void theTimerLetsWaitersThroughWithRealTime() throws Exception {
    // given a short real TTL and a holder that never releases
    RecordingListener heard = new RecordingListener();
    try (LocalOrderingGate real =
        LocalOrderingGate.builder(OrderingConfig.custom().lockTtl(Duration.ofMillis(100)).build())
            .listener(heard)
            .build()) {
      Permit stuck = real.acquire("k");
      TestThreads threads = new TestThreads();
      threads.start("blocked", () -> real.acquire("k").close());
      CompletableFuture<Permit> async = real.acquireAsync("k");

      // when / then: the waiters get through with no call from us
      threads.joinAll();
      async.get(30, TimeUnit.SECONDS).close();
      assertThat(stuck.held()).isFalse();
      assertThat(heard.events).anyMatch(e -> e.startsWith("expired k "));
      stuck.close();
      assertThat(real.activeKeys()).isZero();
    }
  }

  @Test
  void aSharedSchedulerRunsTheTimersAndOutlivesTheGate() throws Exception {
    // given
    ScheduledThreadPoolExecutor shared = new ScheduledThreadPoolExecutor(1);
    try {
      LocalOrderingGate gateA =
          LocalOrderingGate.builder(OrderingConfig.custom().lockTtl(Duration.ofMillis(50)).build())
              .scheduler(shared)
              .build();
      Permit stuck = gateA.acquire("k");
      CompletableFuture<Permit> next = gateA.acquireAsync("k");

      // when
      next.get(30, TimeUnit.SECONDS).close();
      gateA.close();

      // then
      assertThat(shared.isShutdown()).isFalse();
      stuck.close();
      assertThat(gateA.activeKeys()).isZero();
    } finally {
      shared.shutdownNow();
    }
  }

  @Test
  void aRejectingSchedulerFailsTheWaiterInsteadOfLeavingItWithoutATimer() throws Exception {
    // given a scheduler that was shut down before the gate
    ScheduledThreadPoolExecutor dead = new ScheduledThreadPoolExecutor(1);
    dead.shutdown();
    try (LocalOrderingGate broken =
        LocalOrderingGate.builder(OrderingConfig.ofDefaults()).scheduler(dead).build()) {
      Permit holder = broken.acquire("k");

      // when / then
      assertThat(broken.acquireAsync("k"))
          .isCompletedExceptionally()
          .failsWithin(Duration.ZERO)
          .withThrowableOfType(java.util.concurrent.ExecutionException.class)
          .withMessageContaining("scheduler rejected");
      assertThat(broken.queued("k")).isZero();
      holder.close();
      assertThat(broken.activeKeys()).isZero();
    }
  }
}
