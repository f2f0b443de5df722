package dev.idem.ordering;

import static dev.idem.ordering.Eventually.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded random workloads over many keys and threads, mixing blocking, async, submitted, cancelled
 * and interrupted requests, checking the strict invariants: per key, at most one holder at a time,
 * and the requests whose arrival order the test knows run in exactly that order.
 *
 * <p>Every run prints its seed; rerun one with {@code -Didem.ordering.seed=<seed>} (thread
 * interleavings still vary, the workload does not).
 */
@Timeout(120)
class LocalOrderingGateStressTest {

  /** One key's bookkeeping. Arrivals are numbered under {@code arrivalLock}. */
  private static final class KeyLog {
    final String key;
    final Object arrivalLock = new Object();
    int nextArrival; // guarded by arrivalLock
    final List<Integer> withdrawn = Collections.synchronizedList(new ArrayList<>());
    final List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger inside = new AtomicInteger();

    KeyLog(String key) {
      this.key = key;
    }
  }

  @RepeatedTest(3)
  void randomWorkloadsKeepPerKeyOrderAndExclusion() throws Exception {
    long seed = Long.getLong("idem.ordering.seed", System.nanoTime());
    System.out.println(
        "LocalOrderingGateStressTest seed="
            + seed
            + " (rerun with -Didem.ordering.seed="
            + seed
            + ")");
    Random random = new Random(seed);
    int keyCount = 1 + random.nextInt(32);
    int workers = 4 + random.nextInt(4);
    int opsPerWorker = 300 + random.nextInt(300);
    KeyLog[] logs = new KeyLog[keyCount];
    for (int k = 0; k < keyCount; k++) {
      logs[k] = new KeyLog("key-" + k);
    }
    AtomicInteger overlaps = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(3);
    LocalOrderingGate gate =
        LocalOrderingGate.builder(OrderingConfig.ofDefaults()).executor(pool).build();
    TestThreads threads = new TestThreads();
    try {
      // Workers that know the arrival order of what they ask for: async, submit, cancel.
      for (int w = 0; w < workers; w++) {
        Random r = new Random(random.nextLong());
        threads.start(
            "ordered-" + w,
            () -> {
              for (int i = 0; i < opsPerWorker; i++) {
                KeyLog log = logs[Math.min(r.nextInt(keyCount), r.nextInt(keyCount))];
                int spin = r.nextInt(4);
                int op = r.nextInt(10);
                if (op < 5) {
                  CompletableFuture<Permit> turn;
                  int arrival;
                  synchronized (log.arrivalLock) {
                    arrival = log.nextArrival++;
                    turn = gate.acquireAsync(log.key);
                  }
                  if (r.nextInt(6) == 0 && turn.cancel(false)) {
                    log.withdrawn.add(arrival);
                    continue;
                  }
                  try (Permit p = turn.get(60, TimeUnit.SECONDS)) {
                    run(log, arrival, spin, overlaps);
                  }
                } else {
                  CompletableFuture<Void> done;
                  int arrival;
                  synchronized (log.arrivalLock) {
                    arrival = log.nextArrival++;
                    done =
                        gate.submit(
                            log.key,
                            () -> {
                              run(log, arrival, spin, overlaps);
                              return CompletableFuture.completedFuture(null);
                            });
                  }
                  done.get(60, TimeUnit.SECONDS);
                }
              }
            });
      }
      // Workers that only block, and are interrupted at random.
      AtomicBoolean orderedDone = new AtomicBoolean();
      AtomicInteger interruptedWaits = new AtomicInteger();
      List<TestThreads.Started> blockers = new ArrayList<>();
      for (int b = 0; b < 2; b++) {
        Random r = new Random(random.nextLong());
        blockers.add(
            threads.start(
                "blocking-" + b,
                () -> {
                  while (!orderedDone.get()) {
                    KeyLog log = logs[r.nextInt(keyCount)];
                    try (Permit p = gate.acquire(log.key)) {
                      run(log, -1, r.nextInt(4), overlaps);
                    } catch (InterruptedException e) {
                      interruptedWaits.incrementAndGet();
                    }
                  }
                  Thread.interrupted();
                }));
      }
      Random interrupts = new Random(random.nextLong());
      TestThreads.Started interrupter =
          threads.start(
              "interrupter",
              () -> {
                while (!orderedDone.get()) {
                  blockers.get(interrupts.nextInt(blockers.size())).thread.interrupt();
                  for (int y = interrupts.nextInt(200); y > 0; y--) {
                    Thread.yield();
                  }
                }
              });

      // when every ordered worker has finished
      await()
          .atMost(Duration.ofSeconds(100))
          .until(
              () ->
                  threads.started().stream()
                      .filter(s -> s.thread.getName().startsWith("ordered-"))
                      .noneMatch(s -> s.thread.isAlive()));
      orderedDone.set(true);
      interrupter.awaitEnd();
      threads.joinAll();

      // then
      assertThat(overlaps).as("events of one key that overlapped").hasValue(0);
      for (KeyLog log : logs) {
        List<Integer> expected = new ArrayList<>();
        for (int a = 0; a < log.nextArrival; a++) {
          if (!log.withdrawn.contains(a)) {
            expected.add(a);
          }
        }
        assertThat(log.ran).as("run order of %s (seed %d)", log.key, seed).isEqualTo(expected);
      }
      await().until(() -> gate.activeKeys() == 0);
      System.out.println(
          "LocalOrderingGateStressTest keys="
              + keyCount
              + " workers="
              + workers
              + " ops="
              + workers * opsPerWorker
              + " interruptedWaits="
              + interruptedWaits.get());
    } finally {
      gate.close();
      pool.shutdownNow();
    }
  }

  private static void run(KeyLog log, int arrival, int spin, AtomicInteger overlaps) {
    if (log.inside.incrementAndGet() != 1) {
      overlaps.incrementAndGet();
    }
    if (arrival >= 0) {
      log.ran.add(arrival);
    }
    for (int i = 0; i < spin; i++) {
      Thread.yield();
    }
    log.inside.decrementAndGet();
  }
}
