package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Storms every store faces (after ShedLock's {@code FuzzTester}): many threads on overlapping keys,
 * released as one by a barrier. Exactly one thread acquires each key, nothing it commits is lost,
 * two holders never overlap, and an expired entry is taken over exactly once. Sizes are small
 * enough for a remote store to run each storm in a few seconds.
 */
abstract class ConcurrencyChecks extends ContractChecks {
  static final int THREADS = 8;
  private static final int ROUNDS = 4;
  private static final int KEYS_PER_ROUND = 24;
  private static final int BATCH = 6;
  private static final long STORM_TIMEOUT_SECONDS = 60;

  ConcurrencyChecks(StoreFixture fx) {
    super(fx);
  }

  /** What one thread saw for one key. */
  private record Seen(
      DedupKey key, int thread, ReserveResult answer, @Nullable SettleResult commit) {}

  @Test
  void exactlyOneThreadAcquiresEachKeyAndNoCommitIsLost() throws Exception {
    for (int round = 0; round < ROUNDS; round++) {
      // given fresh keys, and threads that each go through all of them in their own order,
      // half with the single forms and half with the batch forms
      List<DedupKey> keys = new ArrayList<>();
      for (int i = 0; i < KEYS_PER_ROUND; i++) {
        keys.add(newKey());
      }
      long at = now();
      DedupStore store = store();
      CyclicBarrier start = new CyclicBarrier(THREADS);
      int r = round;

      // when
      List<List<Seen>> seen =
          storm(
              thread ->
                  () -> {
                    // threads 0 to 3 go in the same order (head-on collisions on every key),
                    // the others in their own orders
                    List<DedupKey> order = new ArrayList<>(keys);
                    if (thread >= THREADS / 2) {
                      Collections.shuffle(order, new Random(31L * r + thread));
                    }
                    start.await(STORM_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                    return thread % 2 == 0
                        ? reserveAndCommitOneByOne(store, order, thread, at)
                        : reserveAndCommitInBatches(store, order, thread, at);
                  });

      // then
      Map<DedupKey, Seen> winners = new HashMap<>();
      for (List<Seen> perThread : seen) {
        assertThat(perThread).as("answers of one thread in round %d", round).hasSize(keys.size());
        for (Seen s : perThread) {
          if (s.answer() instanceof ReserveResult.Acquired) {
            Seen earlier = winners.put(s.key(), s);
            assertThat(earlier)
                .as(
                    "round %d: %s acquired by threads %s and %d",
                    round, s.key(), earlier, s.thread())
                .isNull();
            assertThat(s.commit())
                .as("commit by the thread that acquired %s", s.key())
                .isEqualTo(SettleResult.APPLIED);
          } else {
            assertThat(s.answer())
                .as("round %d: answer to thread %d for %s", round, s.thread(), s.key())
                .isInstanceOfAny(ReserveResult.Duplicate.class, ReserveResult.InFlight.class);
          }
        }
      }
      assertThat(winners.keySet())
          .as("keys acquired in round %d", round)
          .containsExactlyInAnyOrderElementsOf(keys);
      for (List<Seen> perThread : seen) {
        for (Seen s : perThread) {
          if (s.answer() instanceof ReserveResult.Duplicate d) {
            assertThat(Describe.answer(d))
                .as("duplicate seen by thread %d: the winner's commit", s.thread())
                .isEqualTo(
                    Describe.answer(duplicate(at, at + WINDOW, resultOf(winners.get(s.key())))));
          } else if (s.answer() instanceof ReserveResult.InFlight f) {
            assertThat(f.leaseUntilMillis()).as("lease seen by a loser").isEqualTo(at + LEASE);
          }
        }
      }
      for (DedupKey key : keys) {
        assertState(
            inspect(key), committedState(at, at + WINDOW, null, resultOf(winners.get(key))));
      }
    }
  }

  private List<Seen> reserveAndCommitOneByOne(
      DedupStore store, List<DedupKey> order, int thread, long at) {
    Scope scope = scope();
    List<Seen> out = new ArrayList<>();
    for (DedupKey key : order) {
      long token = newTokenFor(thread);
      ReserveResult answer =
          store.reserve(new ReserveRequest(scope, key, null, token, at, LEASE, SLIDING));
      SettleResult commit = null;
      if (answer instanceof ReserveResult.Acquired) {
        commit = store.commit(new CommitRequest(scope, key, token, at, SLIDING, tokenBytes(token)));
      }
      out.add(new Seen(key, thread, answer, commit));
    }
    return out;
  }

  private List<Seen> reserveAndCommitInBatches(
      DedupStore store, List<DedupKey> order, int thread, long at) {
    Scope scope = scope();
    List<Seen> out = new ArrayList<>();
    for (int from = 0; from < order.size(); from += BATCH) {
      List<DedupKey> chunk = order.subList(from, Math.min(order.size(), from + BATCH));
      List<ReserveRequest> requests = new ArrayList<>();
      for (DedupKey key : chunk) {
        requests.add(new ReserveRequest(scope, key, null, newTokenFor(thread), at, LEASE, SLIDING));
      }
      List<ReserveResult> answers = store.reserveAll(requests);
      assertThat(answers).as("reserveAll answers").hasSize(chunk.size());
      List<CommitRequest> commits = new ArrayList<>();
      List<Integer> committed = new ArrayList<>();
      for (int i = 0; i < chunk.size(); i++) {
        if (answers.get(i) instanceof ReserveResult.Acquired) {
          long token = requests.get(i).token();
          commits.add(
              new CommitRequest(scope, chunk.get(i), token, at, SLIDING, tokenBytes(token)));
          committed.add(i);
        }
      }
      List<SettleResult> settled = commits.isEmpty() ? List.of() : store.commitAll(commits);
      assertThat(settled).as("commitAll answers").hasSize(commits.size());
      for (int i = 0; i < chunk.size(); i++) {
        int c = committed.indexOf(i);
        out.add(new Seen(chunk.get(i), thread, answers.get(i), c < 0 ? null : settled.get(c)));
      }
    }
    return out;
  }

  @Test
  void twoHoldersNeverOverlapWhileKeysAreReleasedAndTakenAgain() throws Exception {
    // given a few hot keys that threads keep reserving and releasing
    int keyCount = 3;
    int iterations = 40;
    List<DedupKey> keys = List.of(newKey(), newKey(), newKey());
    AtomicIntegerArray holders = new AtomicIntegerArray(keyCount);
    AtomicLongArray unguarded = new AtomicLongArray(keyCount);
    AtomicLongArray acquisitions = new AtomicLongArray(keyCount);
    long at = now();
    DedupStore store = store();
    Scope scope = scope();
    CyclicBarrier start = new CyclicBarrier(THREADS);

    // when each thread, while it holds a key, does a read-yield-write on that key's counter
    List<List<String>> problems =
        storm(
            thread ->
                () -> {
                  Random random = new Random(thread);
                  List<String> seen = new ArrayList<>();
                  start.await(STORM_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                  for (int i = 0; i < iterations; i++) {
                    int k = random.nextInt(keyCount);
                    long token = newTokenFor(thread);
                    ReserveResult answer =
                        store.reserve(
                            new ReserveRequest(
                                scope, keys.get(k), null, token, at, LEASE, SLIDING));
                    if (answer instanceof ReserveResult.Acquired) {
                      if (holders.incrementAndGet(k) != 1) {
                        seen.add(
                            "thread "
                                + thread
                                + " acquired key "
                                + k
                                + " while another thread held it");
                      }
                      long v = unguarded.get(k);
                      Thread.yield();
                      unguarded.set(k, v + 1);
                      acquisitions.incrementAndGet(k);
                      holders.decrementAndGet(k);
                      SettleResult released =
                          store.release(new ReleaseRequest(scope, keys.get(k), token, at));
                      if (released != SettleResult.APPLIED) {
                        seen.add(
                            "thread "
                                + thread
                                + ": release by the holder of key "
                                + k
                                + " answered "
                                + released);
                      }
                    } else if (!(answer instanceof ReserveResult.InFlight)) {
                      seen.add(
                          "thread "
                              + thread
                              + ": key "
                              + k
                              + " answered "
                              + Describe.answer(answer));
                    }
                  }
                  return seen;
                });

    // then
    assertThat(problems.stream().flatMap(List::stream).toList())
        .as("single-flight violations")
        .isEmpty();
    long total = 0;
    for (int k = 0; k < keyCount; k++) {
      assertThat(unguarded.get(k))
          .as("updates made under key %d (a lost one means two holders overlapped)", k)
          .isEqualTo(acquisitions.get(k));
      assertState(inspect(keys.get(k)), KeyState.ABSENT);
      total += acquisitions.get(k);
    }
    assertThat(total).as("acquisitions in the storm").isPositive();
  }

  @Test
  void anExpiredEntryIsTakenOverByExactlyOneThread() throws Exception {
    // given keys whose holder died and keys whose window passed
    int half = 8;
    Ttl oneMinute = new Ttl(LEASE, Expiry.FIXED);
    List<DedupKey> leased = new ArrayList<>();
    List<DedupKey> expired = new ArrayList<>();
    List<Long> deadHolders = new ArrayList<>();
    for (int i = 0; i < half; i++) {
      DedupKey l = newKey();
      leased.add(l);
      deadHolders.add(acquire(l));
      DedupKey e = newKey();
      expired.add(e);
      commitNew(e, null, oneMinute, utf8("old"));
    }
    advance(LEASE);
    long at = now();
    List<DedupKey> all = new ArrayList<>(leased);
    all.addAll(expired);
    DedupStore store = store();
    Scope scope = scope();
    CyclicBarrier start = new CyclicBarrier(THREADS);

    // when
    List<List<Seen>> seen =
        storm(
            thread ->
                () -> {
                  List<DedupKey> order = new ArrayList<>(all);
                  Collections.shuffle(order, new Random(thread));
                  List<Seen> out = new ArrayList<>();
                  start.await(STORM_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                  for (DedupKey key : order) {
                    ReserveResult answer =
                        store.reserve(
                            new ReserveRequest(
                                scope, key, null, newTokenFor(thread), at, LEASE, SLIDING));
                    out.add(new Seen(key, thread, answer, null));
                  }
                  return out;
                });

    // then each key went to one thread; the others saw its reservation
    Map<DedupKey, ReserveResult.Acquired> winners = new HashMap<>();
    for (List<Seen> perThread : seen) {
      for (Seen s : perThread) {
        if (s.answer() instanceof ReserveResult.Acquired a) {
          assertThat(winners.put(s.key(), a))
              .as("a second takeover of %s by thread %d", s.key(), s.thread())
              .isNull();
          // a store that sweeps in the background may have removed the dead entry first
          ReserveResult.Replaced expected =
              leased.contains(s.key())
                  ? ReserveResult.Replaced.EXPIRED_LEASE
                  : ReserveResult.Replaced.EXPIRED_KEY;
          assertThat(a.replaced())
              .as("what the takeover of %s replaced", s.key())
              .isIn(expected, ReserveResult.Replaced.NOTHING);
        } else {
          assertThat(Describe.answer(s.answer()))
              .as("answer to a loser")
              .isEqualTo(Describe.answer(inFlight(at + LEASE)));
        }
      }
    }
    assertThat(winners.keySet()).containsExactlyInAnyOrderElementsOf(all);
    for (int i = 0; i < half; i++) {
      assertSettle(
          commit(leased.get(i), deadHolders.get(i)), SettleResult.STALE, "commit by a dead holder");
    }
    for (DedupKey key : all) {
      assertState(inspect(key), inFlightState(at, at + LEASE, null));
      assertSettle(
          commit(key, winners.get(key).token()), SettleResult.APPLIED, "commit by the new holder");
    }
  }

  /** A token unique to the thread (the storm's threads share no random generator). */
  private static long newTokenFor(int thread) {
    long t;
    do {
      t = ThreadLocalRandom.current().nextLong() ^ ((long) thread << 56);
    } while (t == 0);
    return t;
  }

  private static byte[] tokenBytes(long token) {
    return ByteBuffer.allocate(Long.BYTES).putLong(token).array();
  }

  private static byte[] resultOf(Seen winner) {
    return tokenBytes(((ReserveResult.Acquired) winner.answer()).token());
  }

  /** A task that runs on storm thread {@code thread}. */
  @FunctionalInterface
  interface Task<T> {
    Callable<T> on(int thread);
  }

  /** Runs one task per thread and returns their results in thread order. */
  static <T> List<T> storm(Task<T> task) throws InterruptedException {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        futures.add(pool.submit(task.on(t)));
      }
      List<T> results = new ArrayList<>();
      for (Future<T> f : futures) {
        try {
          results.add(f.get(STORM_TIMEOUT_SECONDS, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          throw new AssertionError("a storm thread failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
          throw new AssertionError(
              "a storm thread did not finish within "
                  + STORM_TIMEOUT_SECONDS
                  + " s: the store deadlocked or is far too slow",
              e);
        }
      }
      return results;
    } finally {
      pool.shutdownNow();
      if (!pool.awaitTermination(STORM_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        throw new AssertionError("storm threads did not stop");
      }
    }
  }
}
