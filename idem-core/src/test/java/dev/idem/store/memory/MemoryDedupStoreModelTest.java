package dev.idem.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Seeded randomized differential test: thousands of random operations with random clock steps,
 * applied to the store and to {@link ReferenceStripes} (a {@link ReferenceScope} per stripe); every
 * answer, every listener event, every scope's size and (regularly) every key's state must agree,
 * and the store's structure must stay consistent (chains, recency lists, dense slots, pages). A
 * failure names the seed; rerun one with {@code -Didem.seed=N}.
 */
class MemoryDedupStoreModelTest {
  private static final Scope A = Scope.of("model-a");
  private static final Scope B = Scope.of("model-b");
  private static final String QUEUE = "model-outbox";

  static Stream<Arguments> runs() {
    long random = Long.getLong("idem.seed", System.nanoTime());
    List<Arguments> runs = new ArrayList<>();
    // maxKeys of A, of B, key pool, operations, slots per sweep chunk, verify every N operations,
    // operations per phase, most stripes per scope
    for (long seed : new long[] {1, 2, 3, random}) {
      runs.add(Arguments.of(seed, 4, 7, 12, 20_000, 3, 1, 2_000, 16));
      runs.add(Arguments.of(seed, 40, 64, 150, 30_000, 16, 5, 2_000, 16));
    }
    // One stripe: grows past the 2,048-slot first page and shrinks back, with a chunked sweep.
    runs.add(Arguments.of(7L, 7_000, 30, 9_000, 60_000, 1_000, 5_000, 20_000, 1));
    runs.add(Arguments.of(random, 7_000, 30, 9_000, 60_000, 1_000, 5_000, 20_000, 1));
    // Split into 8 stripes of 875 keys (and B into 2 of 600), each its own LRU.
    runs.add(Arguments.of(8L, 7_000, 1_200, 9_000, 60_000, 1_000, 5_000, 20_000, 16));
    runs.add(Arguments.of(random, 7_000, 1_200, 9_000, 60_000, 1_000, 5_000, 20_000, 16));
    return runs.stream();
  }

  @ParameterizedTest(name = "seed={0} maxKeys={1}/{2} pool={3} ops={4} stripes<={8}")
  @MethodSource("runs")
  @Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void storeAgreesWithTheReferenceModel(
      long seed,
      int maxA,
      int maxB,
      int pool,
      int ops,
      int sweepChunk,
      int verifyEvery,
      int phase,
      int maxStripes) {
    try {
      run(seed, maxA, maxB, pool, ops, sweepChunk, verifyEvery, phase, maxStripes);
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "differential run failed; reproduce with seed=" + seed + ": " + e.getMessage(), e);
    }
  }

  private static void run(
      long seed,
      int maxA,
      int maxB,
      int pool,
      int ops,
      int sweepChunk,
      int verifyEvery,
      int phaseLength,
      int maxStripes) {
    SplittableRandom rnd = new SplittableRandom(seed);
    List<String> storeEvents = new ArrayList<>();
    DedupListener recorder =
        new DedupListener() {
          @Override
          public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
            storeEvents.add(scope + " evicted " + key + " " + beforeTtl);
          }

          @Override
          public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
            storeEvents.add(scope + " expired " + key + " " + leaseExpired);
          }
        };
    MemoryDedupStore store =
        MemoryDedupStore.builder()
            .maxKeysPerScope(maxA)
            .maxKeys(B, maxB)
            .listener(recorder)
            .sweepChunk(sweepChunk)
            .maxStripes(maxStripes)
            .build();
    Map<Scope, ReferenceStripes> model = new HashMap<>();
    model.put(A, new ReferenceStripes(maxA, maxStripes));
    model.put(B, new ReferenceStripes(maxB, maxStripes));

    DedupKey[] keys = new DedupKey[pool];
    for (int i = 0; i < pool; i++) {
      // Some keys differ only in their last word, to exercise the hash mixing and long chains.
      keys[i] =
          i % 5 == 0
              ? DedupKey.ofWords(0, 0, 0, i)
              : DedupKey.ofWords(rnd.nextLong(), rnd.nextLong(), rnd.nextLong(), rnd.nextLong());
    }
    Fingerprint[] fps = {
      null, Fingerprint.sha256(new byte[] {1}), Fingerprint.sha256(new byte[] {2}),
    };
    Ttl[] ttls = {
      Ttl.NONE,
      new Ttl(5, Expiry.SLIDING),
      new Ttl(40, Expiry.SLIDING),
      new Ttl(5, Expiry.FIXED),
      new Ttl(40, Expiry.FIXED),
      new Ttl(1_000_000, Expiry.SLIDING),
      new Ttl(1_000_000, Expiry.FIXED),
    };
    Map<DedupKey, Long> tokens = new HashMap<>();
    long now = 1_000;
    long expectedDepth = 0;
    // Most operations hit a hot part of the pool, except in runs long enough to fill pages.
    int hot = phaseLength > 2_000 ? pool : Math.max(4, pool / 3);
    int maxCapacity = 0;
    boolean shrankFromPages = false;

    for (int op = 0; op < ops; op++) {
      int phase = (op / phaseLength + 1) % 3; // 1: growing, 2: shrinking, 0: balanced
      int step = rnd.nextInt(100);
      now +=
          step < 50 ? 0 : step < 90 ? 1 + rnd.nextInt(3) : step < 99 ? 10 + rnd.nextInt(90) : 1000;
      Scope scope = rnd.nextInt(4) == 0 ? B : A;
      ReferenceStripes ref = model.get(scope);
      DedupKey key =
          keys[rnd.nextInt(4) == 0 ? rnd.nextInt(pool) : rnd.nextInt(Math.min(hot, pool))];
      Ttl ttl = ttls[rnd.nextInt(ttls.length)];
      long token = tokens.getOrDefault(key, 0L);
      if (token == 0 || rnd.nextInt(5) == 0) {
        token = 1 + rnd.nextInt(1_000_000);
      }
      int kind = rnd.nextInt(100);
      int reserveShare = phase == 1 ? 60 : phase == 2 ? 10 : 40;
      int commitShare = reserveShare + (phase == 2 ? 10 : 30);
      int releaseShare = commitShare + (phase == 2 ? 25 : 8);
      int forgetShare = releaseShare + (phase == 2 ? 50 : 4);
      String what = "op#" + op + " at " + now + " on " + scope + " " + key;
      final long t = now;
      if (kind < reserveShare) {
        ReserveRequest r =
            new ReserveRequest(
                scope,
                key,
                fps[rnd.nextInt(fps.length)],
                1 + rnd.nextInt(1_000_000),
                now,
                1 + rnd.nextInt(30),
                ttl);
        if (rnd.nextInt(10) == 0) {
          ReserveRequest second =
              new ReserveRequest(
                  scope, keys[rnd.nextInt(pool)], null, 1 + rnd.nextInt(1_000_000), now, 7, ttl);
          List<Object> expected = new ArrayList<>();
          for (ReserveRequest each : List.of(r, second)) {
            Object e = outcome(() -> model.get(scope).reserve(each));
            expected.add(e);
            if (e instanceof ReserveResult.Acquired a) {
              tokens.put(each.key(), a.token());
            }
            if (e instanceof String) {
              break;
            }
          }
          Object actual = outcome(() -> store.reserveAll(List.of(r, second)));
          assertSame(
              what + " reserveAll",
              expected.contains("StoreException") ? "StoreException" : expected,
              actual);
        } else {
          Object expected = outcome(() -> ref.reserve(r));
          if (expected instanceof ReserveResult.Acquired a) {
            tokens.put(key, a.token());
          }
          assertSame(what + " reserve", expected, outcome(() -> store.reserve(r)));
        }
      } else if (kind < commitShare) {
        byte[] result = rnd.nextInt(3) == 0 ? new byte[] {(byte) op, 7} : null;
        CommitRequest c = new CommitRequest(scope, key, token, now, ttl, result);
        CommitRequest forModel =
            new CommitRequest(scope, key, token, now, ttl, result == null ? null : result.clone());
        int how = rnd.nextInt(10);
        Object expected = outcome(() -> ref.commit(forModel));
        Object actual;
        if (how == 0) {
          actual = outcome(() -> store.commitAll(List.of(c)).get(0));
        } else if (how == 1) {
          OutboxMessage m = new OutboxMessage(QUEUE, key, new byte[] {1});
          actual = outcome(() -> store.commitAndEnqueue(c, m));
          if (ref.lastCommitChanged) {
            expectedDepth++;
          }
        } else {
          actual = outcome(() -> store.commit(c));
        }
        if (result != null) {
          result[0] ^= 0x55; // the store must have kept its own copy
        }
        assertSame(what + " commit", expected, actual);
      } else if (kind < releaseShare && phase != 2 && rnd.nextInt(3) == 0) {
        ExtendRequest e = new ExtendRequest(scope, key, token, now, 1 + rnd.nextInt(30));
        Object expected = outcome(() -> ref.extend(e));
        Object actual =
            rnd.nextBoolean()
                ? outcome(() -> store.extend(e))
                : outcome(() -> store.extendAll(List.of(e)).get(0));
        assertSame(what + " extend", expected, actual);
      } else if (kind < releaseShare) {
        ReleaseRequest r = new ReleaseRequest(scope, key, token, now);
        Object expected = outcome(() -> ref.release(r));
        Object actual =
            rnd.nextBoolean()
                ? outcome(() -> store.release(r))
                : outcome(() -> store.releaseAll(List.of(r)).get(0));
        assertSame(what + " release", expected, actual);
      } else if (kind < forgetShare) {
        assertSame(what + " forget", ref.forget(key), store.forget(scope, key));
      } else if (kind < 97) {
        assertSame(what + " inspect", ref.inspect(key, t), store.inspect(scope, key, t));
      } else if (kind < 99) {
        long expected = model.get(A).sweep(now) + model.get(B).sweep(now);
        assertSame(what + " sweepExpired", expected, store.sweepExpired(now));
      } else if (rnd.nextInt(20) == 0) {
        assertSame(what + " clear", ref.clear(), store.clear(scope));
      }

      int capacity = store.largestStripeCapacity(A);
      maxCapacity = Math.max(maxCapacity, capacity);
      shrankFromPages |=
          maxCapacity > Segment.PAGE_SIZE && capacity < maxCapacity && store.size(A) > 0;
      if (op % verifyEvery == 0) {
        store.verify(A);
        store.verify(B);
      }
      List<String> expectedEvents = new ArrayList<>();
      for (Scope s : List.of(A, B)) {
        for (String e : model.get(s).events) {
          expectedEvents.add(s + " " + e);
        }
        model.get(s).events.clear();
      }
      Collections.sort(expectedEvents);
      Collections.sort(storeEvents);
      assertThat(storeEvents).as(what + " events").isEqualTo(expectedEvents);
      storeEvents.clear();
      for (Scope s : List.of(A, B)) {
        assertThat(store.size(s)).as(what + " size of " + s).isEqualTo(model.get(s).size());
      }
      assertThat(store.depth(QUEUE)).as(what + " outbox depth").isEqualTo(expectedDepth);
      if (op % verifyEvery == 0 || op == ops - 1) {
        for (Scope s : List.of(A, B)) {
          store.verify(s);
          for (DedupKey k : model.get(s).keys()) {
            assertSame(what + " state of " + k, model.get(s).inspect(k, t), store.inspect(s, k, t));
          }
        }
      }
    }
    if (maxA / Stripes.count(maxA, maxStripes) > Segment.PAGE_SIZE) {
      assertThat(maxCapacity).as("grew past one page").isGreaterThan(Segment.PAGE_SIZE);
      assertThat(shrankFromPages).as("gave pages back").isTrue();
    }
  }

  private static Object outcome(Supplier<?> call) {
    try {
      return call.get();
    } catch (StoreException e) {
      return "StoreException";
    }
  }

  private static void assertSame(String what, Object expected, Object actual) {
    assertThat(normal(actual)).as(what).isEqualTo(normal(expected));
  }

  /** Records holding byte arrays compare arrays by identity; compare their contents instead. */
  private static Object normal(Object o) {
    if (o instanceof List<?> list) {
      return list.size() == 1 ? normal(list.get(0)) : list.stream().map(x -> normal(x)).toList();
    }
    if (o instanceof ReserveResult.Duplicate d) {
      return "Duplicate["
          + d.committedAtMillis()
          + ", "
          + d.expiresAtMillis()
          + ", "
          + Arrays.toString(d.result())
          + "]";
    }
    if (o instanceof KeyState.Committed c) {
      return "Committed["
          + c.committedAtMillis()
          + ", "
          + c.expiresAtMillis()
          + ", "
          + c.fingerprint()
          + ", "
          + Arrays.toString(c.result())
          + "]";
    }
    return o;
  }
}
