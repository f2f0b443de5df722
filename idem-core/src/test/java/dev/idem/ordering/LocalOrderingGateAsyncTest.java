package dev.idem.ordering;

import static dev.idem.ordering.Eventually.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LocalOrderingGateAsyncTest {
  private final LocalOrderingGate gate = LocalOrderingGate.create(OrderingConfig.ofDefaults());
  private final ExecutorService workers = Executors.newFixedThreadPool(4);

  @AfterEach
  void tearDown() {
    gate.close();
    workers.shutdownNow();
  }

  @Test
  void aFreeKeyIsGrantedBeforeAcquireAsyncReturns() {
    // when
    CompletableFuture<Permit> turn = gate.acquireAsync("k");

    // then
    assertThat(turn).isDone();
    assertThat(turn.join().exclusive()).isTrue();
    turn.join().close();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void queuedFuturesAreGrantedInArrivalOrder() throws Exception {
    // given a held key and five async arrivals
    Permit holder = gate.acquire("k");
    List<CompletableFuture<Permit>> turns = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      turns.add(gate.acquireAsync("k"));
    }
    assertThat(turns).noneMatch(CompletableFuture::isDone);

    // when
    holder.close();

    // then each is granted only when the one before it releases
    for (int i = 0; i < 5; i++) {
      Permit p = turns.get(i).get(30, TimeUnit.SECONDS);
      for (int j = i + 1; j < 5; j++) {
        assertThat(turns.get(j)).isNotDone();
      }
      p.close();
    }
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void continuationsOfAGrantedFutureDoNotRunOnTheReleasingThread() throws Exception {
    // given
    Permit holder = gate.acquire("k");
    CompletableFuture<Thread> ranOn =
        gate.acquireAsync("k")
            .thenApply(
                p -> {
                  p.close();
                  return Thread.currentThread();
                });

    // when
    holder.close();

    // then
    assertThat(ranOn.get(30, TimeUnit.SECONDS)).isNotSameAs(Thread.currentThread());
  }

  @Test
  void submittedTasksOfOneKeyRunInSubmissionOrderAndNeverOverlap() throws Exception {
    // given tasks whose work completes later, on other threads, for four keys
    int perKey = 50;
    String[] keys = {"a", "b", "c", "d"};
    List<List<Integer>> ran = new ArrayList<>();
    AtomicInteger[] inside = new AtomicInteger[keys.length];
    AtomicInteger overlaps = new AtomicInteger();
    for (int k = 0; k < keys.length; k++) {
      ran.add(Collections.synchronizedList(new ArrayList<>()));
      inside[k] = new AtomicInteger();
    }
    List<CompletableFuture<Integer>> results = new ArrayList<>();

    // when submitted round-robin from one thread
    for (int i = 0; i < perKey; i++) {
      for (int k = 0; k < keys.length; k++) {
        int key = k;
        int event = i;
        results.add(
            gate.submit(
                keys[k],
                () -> {
                  if (inside[key].incrementAndGet() != 1) {
                    overlaps.incrementAndGet();
                  }
                  return CompletableFuture.supplyAsync(
                      () -> {
                        ran.get(key).add(event);
                        inside[key].decrementAndGet();
                        return event;
                      },
                      workers);
                }));
      }
    }
    CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);

    // then
    List<Integer> expected = IntStream.range(0, perKey).boxed().toList();
    for (int k = 0; k < keys.length; k++) {
      assertThat(ran.get(k)).as("key %s", keys[k]).containsExactlyElementsOf(expected);
    }
    assertThat(overlaps).hasValue(0);
    assertThat(results.get(results.size() - 1).join()).isEqualTo(perKey - 1);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void submitReleasesTheTurnWhenTheTaskThrowsReturnsNullOrFails() throws Exception {
    // given
    IllegalStateException boom = new IllegalStateException("boom");

    // when
    CompletableFuture<Object> thrown =
        gate.submit(
            "k",
            () -> {
              throw boom;
            });
    CompletableFuture<Object> nothing = gate.submit("k", () -> null);
    CompletableFuture<Object> failed = gate.submit("k", () -> CompletableFuture.failedFuture(boom));

    // then
    assertThatThrownBy(() -> thrown.get(30, TimeUnit.SECONDS)).hasCause(boom);
    assertThatThrownBy(() -> nothing.get(30, TimeUnit.SECONDS))
        .hasCauseInstanceOf(NullPointerException.class)
        .hasMessageContaining("task returned null");
    assertThatThrownBy(() -> failed.get(30, TimeUnit.SECONDS)).hasCause(boom);
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void submitHoldsTheTurnUntilTheTasksStageCompletes() throws Exception {
    // given a task whose stage is completed by us
    CompletableFuture<String> work = new CompletableFuture<>();
    CompletableFuture<String> first = gate.submit("k", () -> work);
    AtomicBoolean secondRan = new AtomicBoolean();
    CompletableFuture<String> second =
        gate.submit(
            "k",
            () -> {
              secondRan.set(true);
              return CompletableFuture.completedFuture("second");
            });

    // then the second waits
    assertThat(secondRan).isFalse();
    assertThat(gate.queued("k")).isEqualTo(1);

    // when
    work.complete("first");

    // then
    assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("first");
    assertThat(second.get(30, TimeUnit.SECONDS)).isEqualTo("second");
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void cancellingASubmissionBeforeItsTurnWithdrawsItAndTheTaskNeverRuns() throws Exception {
    // given
    Permit holder = gate.acquire("k");
    AtomicBoolean ran = new AtomicBoolean();
    CompletableFuture<String> submitted =
        gate.submit(
            "k",
            () -> {
              ran.set(true);
              return CompletableFuture.completedFuture("ran");
            });

    // when
    submitted.cancel(false);

    // then
    assertThat(gate.queued("k")).isZero();
    holder.close();
    assertThat(gate.activeKeys()).isZero();
    assertThat(ran).isFalse();
  }

  @Test
  void aCancelledWaiterInTheMiddleLeavesTheOthersInOrder() throws Exception {
    // given a holder and three queued futures
    Permit holder = gate.acquire("k");
    CompletableFuture<Permit> first = gate.acquireAsync("k");
    CompletableFuture<Permit> middle = gate.acquireAsync("k");
    CompletableFuture<Permit> last = gate.acquireAsync("k");

    // when
    boolean cancelled = middle.cancel(true);

    // then
    assertThat(cancelled).isTrue();
    assertThat(gate.queued("k")).isEqualTo(2);
    holder.close();
    Permit p1 = first.get(30, TimeUnit.SECONDS);
    assertThat(last).isNotDone();
    p1.close();
    last.get(30, TimeUnit.SECONDS).close();
    assertThat(middle).isCancelled();
    assertThat(gate.activeKeys()).isZero();
  }

  @Test
  void completingTheFutureFromOutsideWithdrawsTheRequest() throws Exception {
    // given
    Permit holder = gate.acquire("k");
    CompletableFuture<Permit> timedOut =
        gate.acquireAsync("k").orTimeout(10, TimeUnit.MILLISECONDS);
    CompletableFuture<Permit> failed = gate.acquireAsync("k");

    // when
    failed.completeExceptionally(new IllegalStateException("gave up"));

    // then
    await().until(timedOut::isDone);
    assertThatThrownBy(timedOut::join).hasCauseInstanceOf(TimeoutException.class);
    // The future reads done a moment before the completing thread withdraws its request.
    await().atMost(Duration.ofSeconds(5)).until(() -> gate.queued("k") == 0);
    holder.close();
    assertThat(gate.activeKeys()).isZero();
    assertThatThrownBy(() -> failed.obtrudeValue(holder))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void aCancelRacingTheHandoverNeverKeepsTheTurn() throws Exception {
    for (int round = 0; round < 500; round++) {
      // given
      Permit holder = gate.acquire("k");
      CompletableFuture<Permit> waiter = gate.acquireAsync("k");

      // when the turn is handed over while the waiter is cancelled
      workers.execute(holder::close);
      boolean cancelled = waiter.cancel(false);

      // then either the cancel won and the turn was passed on, or the waiter has the turn
      if (!cancelled) {
        waiter.get(30, TimeUnit.SECONDS).close();
      }
      await().until(() -> gate.activeKeys() == 0);
      CompletableFuture<Permit> next = gate.acquireAsync("k");
      assertThat(next).isDone();
      next.join().close();
    }
  }

  @Test
  void aClosedGateFailsSubmissions() {
    // given
    gate.close();

    // when
    CompletableFuture<String> submitted =
        gate.submit("k", () -> CompletableFuture.completedFuture("never"));

    // then
    assertThat(submitted)
        .failsWithin(Duration.ZERO)
        .withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(OrderingGateClosedException.class);
    assertThatThrownBy(submitted::join).isInstanceOf(CompletionException.class);
  }
}
