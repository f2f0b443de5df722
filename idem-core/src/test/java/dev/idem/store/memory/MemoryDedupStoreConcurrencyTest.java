package dev.idem.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many threads on overlapping keys: exactly one reserve per key per round is acquired, no commit is
 * lost, and eviction under contention keeps the structure sound and the bound exact.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class MemoryDedupStoreConcurrencyTest {
  private static final int THREADS = 8;
  private static final int KEYS = 64;
  private static final int ROUNDS = 40;
  private static final long NOW = 1_000;
  private static final Ttl HOUR = new Ttl(3_600_000, Expiry.SLIDING);

  private final ExecutorService pool = Executors.newFixedThreadPool(THREADS);

  @AfterEach
  void stop() {
    pool.shutdownNow();
  }

  private static DedupKey key(int round, int i) {
    return DedupKey.ofWords(round, i, round * 31L + i, 42);
  }

  @Test
  void exactlyOneReserveIsAcquiredPerKeyPerRoundAndNoCommitIsLost() throws Exception {
    MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(KEYS).build();
    Scope scope = Scope.of("storm");
    CyclicBarrier start = new CyclicBarrier(THREADS);
    CyclicBarrier settled = new CyclicBarrier(THREADS);
    AtomicIntegerArray acquired = new AtomicIntegerArray(ROUNDS * KEYS);
    AtomicIntegerArray applied = new AtomicIntegerArray(ROUNDS * KEYS);
    AtomicLong tokens = new AtomicLong();
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int seed = t;
      workers.add(
          pool.submit(
              () -> {
                Random rnd = new Random(seed);
                List<Integer> order = new ArrayList<>();
                for (int i = 0; i < KEYS; i++) {
                  order.add(i);
                }
                for (int round = 0; round < ROUNDS; round++) {
                  Collections.shuffle(order, rnd);
                  start.await();
                  for (int i : order) {
                    long token = tokens.incrementAndGet();
                    DedupKey k = key(round, i);
                    ReserveResult r =
                        store.reserve(new ReserveRequest(scope, k, null, token, NOW, 60_000, HOUR));
                    if (r instanceof ReserveResult.Acquired) {
                      acquired.incrementAndGet(round * KEYS + i);
                      // Odd rounds release first and acquire again: a released key is new.
                      if (round % 2 == 1 && rnd.nextBoolean()) {
                        store.release(new ReleaseRequest(scope, k, token, NOW));
                        continue;
                      }
                      SettleResult c =
                          store.commit(new CommitRequest(scope, k, token, NOW, HOUR, null));
                      if (c == SettleResult.APPLIED) {
                        applied.incrementAndGet(round * KEYS + i);
                      }
                    }
                  }
                  settled.await();
                }
                return null;
              }));
    }
    for (Future<?> w : workers) {
      w.get();
    }

    for (int round = 0; round < ROUNDS; round++) {
      for (int i = 0; i < KEYS; i++) {
        int a = acquired.get(round * KEYS + i);
        if (round % 2 == 0) {
          assertThat(a).as("acquisitions of key %d in round %d", i, round).isEqualTo(1);
        } else {
          assertThat(a).as("acquisitions of key %d in round %d", i, round).isBetween(1, THREADS);
        }
        assertThat(applied.get(round * KEYS + i)).as("commits of key %d", i).isLessThanOrEqualTo(1);
      }
    }
    // The last round's keys are all still there (the bound is exactly one round of keys).
    int last = ROUNDS - 1;
    for (int i = 0; i < KEYS; i++) {
      KeyState s = store.inspect(scope, key(last, i), NOW);
      assertThat(s)
          .as("key %d of the last round", i)
          .isInstanceOf(
              applied.get(last * KEYS + i) == 1 ? KeyState.Committed.class : KeyState.Absent.class);
    }
    store.verify(scope);
  }

  @Test
  void evictionUnderContentionKeepsTheBoundAndTheStructure() throws Exception {
    int maxKeys = 16;
    MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).build();
    Scope scope = Scope.of("churn");
    CyclicBarrier start = new CyclicBarrier(THREADS);
    AtomicLong tokens = new AtomicLong();
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int seed = t;
      workers.add(
          pool.submit(
              () -> {
                Random rnd = new Random(seed);
                start.await();
                for (int op = 0; op < 20_000; op++) {
                  DedupKey k = key(0, rnd.nextInt(200));
                  long token = tokens.incrementAndGet();
                  long now = NOW + op / 100;
                  try {
                    ReserveResult r =
                        store.reserve(new ReserveRequest(scope, k, null, token, now, 5, HOUR));
                    if (r instanceof ReserveResult.Acquired && rnd.nextInt(4) != 0) {
                      store.commit(new CommitRequest(scope, k, token, now, HOUR, null));
                    }
                  } catch (StoreException full) {
                    // All 16 entries were live reservations at that moment: refused, unchanged.
                  }
                  if (op % 1_000 == 0) {
                    assertThat(store.size(scope)).isLessThanOrEqualTo(maxKeys);
                  }
                }
                return null;
              }));
    }
    for (Future<?> w : workers) {
      w.get();
    }

    store.verify(scope);
    assertThat(store.size(scope)).isLessThanOrEqualTo(maxKeys);
  }
}
