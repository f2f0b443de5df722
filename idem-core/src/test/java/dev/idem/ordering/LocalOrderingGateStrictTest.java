package dev.idem.ordering;

import static dev.idem.ordering.Eventually.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LocalOrderingGateStrictTest {
  private final LocalOrderingGate gate = LocalOrderingGate.create(OrderingConfig.ofDefaults());
  private final TestThreads threads = new TestThreads();

  @AfterEach
  void closeGate() {
    gate.close();
  }

  @Test
  void aFreeKeyIsGrantedAtOnceAndForgottenOnRelease() throws Exception {
    // when
    Permit permit = gate.acquire("customer-1");

    // then
    assertThat(permit.orderingKey()).isEqualTo("customer-1");
    assertThat(permit.exclusive()).isTrue();
    assertThat(permit.held()).isTrue();
    assertThat(gate.activeKeys()).isEqualTo(1);

    // when
    permit.close();

    // then
    assertThat(permit.held()).isFalse();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void waitersRunOneAtATimeInArrivalOrder() throws Exception {
    // given a held key and ten events that arrive one after another while it is held
    Permit first = gate.acquire("k");
    List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger maxInside = new AtomicInteger();
    for (int i = 0; i < 10; i++) {
      int event = i;
      threads.start(
          "event-" + i,
          () -> {
            try (Permit p = gate.acquire("k")) {
              maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
              ran.add(event);
              Thread.yield();
              inside.decrementAndGet();
            }
          });
      // event i has arrived (is queued) before event i + 1 is even started
      await().until(() -> gate.queued("k") == event + 1);
    }

    // when
    first.close();
    threads.joinAll();

    // then
    assertThat(ran).containsExactlyElementsOf(IntStream.range(0, 10).boxed().toList());
    assertThat(maxInside).hasValue(1);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void eventsOfOneKeyNeverOverlapUnderManyThreads() throws Exception {
    // given
    String[] keys = {"a", "b", "c"};
    AtomicInteger[] inside = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger runs = new AtomicInteger();

    // when eight threads take turns on three keys
    for (int t = 0; t < 8; t++) {
      int thread = t;
      threads.start(
          "worker-" + t,
          () -> {
            for (int i = 0; i < 300; i++) {
              int k = (thread + i) % keys.length;
              try (Permit p = gate.acquire(keys[k])) {
                if (inside[k].incrementAndGet() != 1) {
                  overlaps.incrementAndGet();
                }
                Thread.yield();
                runs.incrementAndGet();
                inside[k].decrementAndGet();
              }
            }
          });
    }
    threads.joinAll();

    // then
    assertThat(overlaps).hasValue(0);
    assertThat(runs).hasValue(8 * 300);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void differentKeysAreHeldAtTheSameTime() throws Exception {
    // given two events of different keys that each wait, holding their turn, for the other
    CyclicBarrier bothHolding = new CyclicBarrier(2);
    List<Boolean> heldWhileOtherHeld = Collections.synchronizedList(new ArrayList<>());
    for (String key : new String[] {"a", "b"}) {
      threads.start(
          "holder-" + key,
          () -> {
            try (Permit p = gate.acquire(key)) {
              bothHolding.await(30, TimeUnit.SECONDS);
              heldWhileOtherHeld.add(p.held());
              bothHolding.await(30, TimeUnit.SECONDS);
            }
          });
    }

    // when / then: both reach the barrier, so neither waited for the other's key
    threads.joinAll();
    assertThat(heldWhileOtherHeld).containsExactly(true, true);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void closingAPermitTwiceDoesNotReleaseTheSuccessorsTurn() throws Exception {
    // given a holder, a second event waiting, and a third behind it
    Permit first = gate.acquire("k");
    CompletableFuture<Permit> second = gate.acquireAsync("k");
    CompletableFuture<Permit> third = gate.acquireAsync("k");

    // when
    first.close();
    Permit secondPermit = second.get(30, TimeUnit.SECONDS);
    first.close();

    // then
    assertThat(secondPermit.held()).isTrue();
    assertThat(third).isNotDone();
    assertThat(gate.queued("k")).isEqualTo(1);
    secondPermit.close();
    third.get(30, TimeUnit.SECONDS).close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void aPermitMayBeClosedOnAnotherThread() throws Exception {
    // given
    Permit first = gate.acquire("k");
    CompletableFuture<Permit> next = gate.acquireAsync("k");

    // when
    threads.start("closer", first::close);
    threads.joinAll();

    // then
    next.get(30, TimeUnit.SECONDS).close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void anInterruptedWaiterLeavesTheQueueWithoutDisturbingTheOthers() throws Exception {
    // given a holder and three blocked waiters, in that order
    Permit holder = gate.acquire("k");
    List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
    List<TestThreads.Started> waiters = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      int event = i;
      waiters.add(
          threads.start(
              "waiter-" + i,
              () -> {
                try (Permit p = gate.acquire("k")) {
                  ran.add(event);
                }
              }));
      await().until(() -> gate.queued("k") == event);
    }

    // when the middle one is interrupted
    waiters.get(1).thread.interrupt();

    // then it gives up, and only it
    assertThat(waiters.get(1).awaitFailure())
        .isInstanceOf(InterruptedException.class)
        .hasMessageContaining("'k'");
    assertThat(gate.queued("k")).isEqualTo(2);

    // when
    holder.close();
    waiters.get(0).awaitEnd();
    waiters.get(2).awaitEnd();

    // then
    assertThat(waiters.get(0).failure.get()).isNull();
    assertThat(waiters.get(2).failure.get()).isNull();
    assertThat(ran).containsExactly(1, 3);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void anInterruptRacingTheHandoverNeverKeepsTheTurn() throws Exception {
    for (int round = 0; round < 200; round++) {
      // given a holder and one blocked waiter
      Permit holder = gate.acquire("k");
      AtomicInteger granted = new AtomicInteger();
      TestThreads.Started waiter =
          new TestThreads()
              .start(
                  "waiter",
                  () -> {
                    try (Permit p = gate.acquire("k")) {
                      granted.incrementAndGet();
                    }
                  });
      await().until(() -> gate.queued("k") == 1);

      // when the turn is handed over just as the waiter is interrupted (either one first)
      if (round % 2 == 0) {
        holder.close();
        waiter.thread.interrupt();
      } else {
        waiter.thread.interrupt();
        holder.close();
      }

      // then it either ran or gave up, and in both cases the key is free again
      Throwable failure = waiter.awaitFailure();
      if (failure == null) {
        assertThat(granted).hasValue(1);
      } else {
        assertThat(failure).isInstanceOf(InterruptedException.class);
        assertThat(granted).hasValue(0);
      }
      assertThat(gate.activeKeys()).isZero();
      CompletableFuture<Permit> next = gate.acquireAsync("k");
      assertThat(next).isDone();
      next.join().close();
    }
  }

  @Test
  void anAlreadyInterruptedThreadDoesNotArrive() throws Exception {
    // given
    Permit holder = gate.acquire("k");

    // when
    Thread.currentThread().interrupt();

    // then
    assertThatThrownBy(() -> gate.acquire("k")).isInstanceOf(InterruptedException.class);
    assertThat(Thread.interrupted()).isFalse();
    assertThat(gate.queued("k")).isZero();
    holder.close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void closingTheGateFailsEveryWaiterAndLaterCalls() throws Exception {
    // given a holder, a blocked waiter and an async waiter
    Permit holder = gate.acquire("k");
    TestThreads.Started blocked = threads.start("blocked", () -> gate.acquire("k").close());
    await().until(() -> gate.queued("k") == 1);
    CompletableFuture<Permit> async = gate.acquireAsync("k");

    // when
    gate.close();

    // then
    assertThat(blocked.awaitFailure())
        .isInstanceOf(OrderingGateClosedException.class)
        .hasMessageContaining("'k'");
    assertThat(async)
        .failsWithin(java.time.Duration.ofSeconds(30))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(OrderingGateClosedException.class);
    assertThatThrownBy(() -> gate.acquire("other")).isInstanceOf(OrderingGateClosedException.class);
    assertThat(gate.acquireAsync("other"))
        .isCompletedExceptionally()
        .failsWithin(java.time.Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(OrderingGateClosedException.class);

    // and the holder still releases, leaving nothing behind
    assertThat(holder.held()).isTrue();
    holder.close();
    assertThat(gate.activeKeys()).isZero();
    gate.close();
  }

  @Test
  void everyKeysStateIsForgottenOnceItGoesIdle() throws Exception {
    // given many keys, some contended
    List<CompletableFuture<Permit>> waiting = new ArrayList<>();
    List<Permit> holders = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      holders.add(gate.acquire("key-" + i));
      if (i % 3 == 0) {
        waiting.add(gate.acquireAsync("key-" + i));
      }
    }
    CompletableFuture<Permit> withdrawn = gate.acquireAsync("key-1");
    assertThat(gate.activeKeys()).isEqualTo(1_000);

    // when every event is done (one gave up)
    withdrawn.cancel(false);
    holders.forEach(Permit::close);
    for (CompletableFuture<Permit> w : waiting) {
      w.get(30, TimeUnit.SECONDS).close();
    }

    // then
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void rejectsAnEmptyKey() {
    assertThatThrownBy(() -> gate.acquire(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be empty");
    assertThatThrownBy(() -> gate.acquireAsync("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> gate.acquire(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void describesItself() throws Exception {
    try (Permit p = gate.acquire("k")) {
      assertThat(p).hasToString("Permit[k, held]");
      assertThat(gate).hasToString("LocalOrderingGate[STRICT, lockTtl=PT1M, activeKeys=1]");
    }
  }
}
