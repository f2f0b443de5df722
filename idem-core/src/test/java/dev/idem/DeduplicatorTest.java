package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.idem.spi.KeyState;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The facade over a small correct store: run once, replay, batches, listeners, failures. */
class DeduplicatorTest {
  private static final Scope SCOPE = Scope.of("shop-orders");
  private static final DedupConfig CONFIG =
      DedupConfig.custom().ttl(Duration.ofMinutes(10)).lease(Duration.ofSeconds(30)).build();
  private static final ResultCodec<String> TEXT =
      new ResultCodec<>() {
        @Override
        public byte[] encode(String value) {
          return value.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(byte[] bytes) {
          return new String(bytes, StandardCharsets.UTF_8);
        }
      };

  private final ManualTimeSource time = new ManualTimeSource();
  private final MapDedupStore store = new MapDedupStore();
  private final RecordingListener events = new RecordingListener();
  private final Deduplicator dedup = dedup(store);
  private int keys;

  private Deduplicator dedup(MapDedupStore on) {
    return Deduplicator.builder(on, SCOPE).config(CONFIG).timeSource(time).listener(events).build();
  }

  private DedupKey newKey() {
    keys++;
    return DedupKey.ofWords(keys, keys * 31L, 7, 9);
  }

  private static String id(DedupKey key) {
    return RecordingListener.id(key);
  }

  private Reservation acquire(Deduplicator d, DedupKey key) {
    Decision decision = d.reserve(key);
    assertThat(decision).isInstanceOf(Decision.Acquired.class);
    return ((Decision.Acquired) decision).reservation();
  }

  /**
   * A store whose commitAsync is the SPI's default (it commits before returning) and the memory
   * store's fast path do not commit asynchronously: a caller commits at once, with no stage.
   */
  @Test
  void neitherTheDefaultCommitAsyncNorTheMemoryStoreCommitsAsynchronously() {
    assertThat(dedup.commitsAsynchronously()).isFalse();
    try (dev.idem.store.memory.MemoryDedupStore memory =
        dev.idem.store.memory.MemoryDedupStore.builder().build()) {
      assertThat(Deduplicator.builder(memory, SCOPE).build().commitsAsynchronously()).isFalse();
    }
  }

  @Nested
  class RunOnce {
    @Test
    void commitsWhenTheWorkReturnsAndSkipsTheDuplicate() {
      DedupKey key = newKey();
      AtomicInteger runs = new AtomicInteger();

      RunResult<Integer> first = dedup.runOnce(key, runs::incrementAndGet);
      RunResult<Integer> second = dedup.runOnce(key, runs::incrementAndGet);

      assertThat(first).isEqualTo(new RunResult.Ran<>(1, Settlement.COMMITTED));
      assertThat(second).isEqualTo(new RunResult.Skipped<>(new Decision.Duplicate(key, null)));
      assertThat(runs).hasValue(1);
      assertThat(dedup.inspect(key)).isInstanceOf(KeyState.Committed.class);
      assertThat(events.events)
          .containsExactly("pass " + id(key), "committed " + id(key), "duplicate " + id(key));
    }

    @Test
    void releasesWhenTheWorkThrowsAndRethrowsTheSameCheckedException() {
      DedupKey key = newKey();
      IOException failure = new IOException("connection reset");

      assertThatThrownBy(
              () ->
                  dedup.<String, IOException>runOnce(
                      key,
                      () -> {
                        throw failure;
                      }))
          .isSameAs(failure)
          .hasNoSuppressedExceptions();

      assertThat(dedup.inspect(key)).isEqualTo(KeyState.ABSENT);
      assertThat(events.events).containsExactly("pass " + id(key), "released " + id(key));
      assertThat(dedup.runOnce(key, () -> "retried"))
          .isEqualTo(new RunResult.Ran<>("retried", Settlement.COMMITTED));
    }

    @Test
    void releasesWhenTheWorkThrowsAnError() {
      DedupKey key = newKey();
      AssertionError failure = new AssertionError("bug in the handler");

      assertThatThrownBy(
              () ->
                  dedup.runOnce(
                      key,
                      () -> {
                        throw failure;
                      }))
          .isSameAs(failure);

      assertThat(dedup.inspect(key)).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void aFailedReleaseIsSuppressedIntoTheWorksException() {
      // given a store that goes away while the work runs
      FlakyStore flaky = new FlakyStore();
      Deduplicator d = dedup(flaky);
      DedupKey key = newKey();
      IllegalStateException failure = new IllegalStateException("work failed");

      // when
      Throwable thrown =
          catchThrowable(
              () ->
                  d.runOnce(
                      key,
                      () -> {
                        flaky.releasesFail = true;
                        throw failure;
                      }));

      // then the caller sees the work's failure, with the release failure attached
      assertThat(thrown).isSameAs(failure);
      assertThat(thrown.getSuppressed()).hasSize(1);
      assertThat(thrown.getSuppressed()[0]).isInstanceOf(StoreUnavailableException.class);
      flaky.releasesFail = false;
      assertThat(d.inspect(key))
          .as("the lease will heal the key")
          .isInstanceOf(KeyState.InFlight.class);
    }

    @Test
    void skipsAnEventWhoseKeyIsInFlight() {
      DedupKey key = newKey();
      Reservation holder = acquire(dedup, key);
      AtomicInteger runs = new AtomicInteger();

      RunResult<Integer> r = dedup.runOnce(key, runs::incrementAndGet);

      assertThat(r)
          .isEqualTo(
              new RunResult.Skipped<>(new Decision.InFlight(key, time.wallMillis() + 30_000)));
      assertThat(runs).hasValue(0);
      assertThat(holder.settlement()).isNull();
      assertThat(events.events).containsExactly("pass " + id(key), "inFlight " + id(key));
    }

    @Test
    void reportsLeaseLostWhenTheWorkOutlastsItsLease() {
      DedupKey key = newKey();

      RunResult<String> r =
          dedup.runOnce(
              key,
              () -> {
                time.advance(Duration.ofSeconds(30));
                return "slow";
              });

      assertThat(r).isEqualTo(new RunResult.Ran<>("slow", Settlement.LEASE_LOST));
      assertThat(dedup.inspect(key)).isEqualTo(KeyState.ABSENT);
      assertThat(events.events).containsExactly("pass " + id(key), "leaseLost " + id(key));
    }
  }

  @Nested
  class Replay {
    @Test
    void storesTheResultAndReplaysItToDuplicates() {
      DedupKey key = newKey();
      Fingerprint fp = Fingerprint.sha256("{\"amount\":100}".getBytes(StandardCharsets.UTF_8));
      AtomicInteger runs = new AtomicInteger();

      RunResult<String> first = dedup.runOnce(key, fp, TEXT, () -> "ch_" + runs.incrementAndGet());
      RunResult<String> second = dedup.runOnce(key, fp, TEXT, () -> "ch_" + runs.incrementAndGet());
      RunResult<String> noFingerprint =
          dedup.runOnce(key, null, TEXT, () -> "ch_" + runs.incrementAndGet());

      assertThat(first).isEqualTo(new RunResult.Ran<>("ch_1", Settlement.COMMITTED));
      assertThat(second).isEqualTo(new RunResult.Replayed<>("ch_1"));
      assertThat(noFingerprint).isEqualTo(new RunResult.Replayed<>("ch_1"));
      assertThat(runs).hasValue(1);
    }

    @Test
    void anotherPayloadUnderTheSameKeyIsSkippedAsAConflict() {
      DedupKey key = newKey();
      dedup.runOnce(key, Fingerprint.sha256(new byte[] {1}), TEXT, () -> "first");

      RunResult<String> r = dedup.runOnce(key, Fingerprint.sha256(new byte[] {2}), TEXT, () -> "x");

      assertThat(r).isEqualTo(new RunResult.Skipped<>(new Decision.Conflict(key)));
      assertThat(events.events).endsWith("conflict " + id(key));
    }

    @Test
    void aDuplicateWithoutAStoredResultIsSkipped() {
      DedupKey key = newKey();
      dedup.runOnce(key, () -> "not stored");

      RunResult<String> r = dedup.runOnce(key, null, TEXT, () -> "again");

      assertThat(r).isEqualTo(new RunResult.Skipped<>(new Decision.Duplicate(key, null)));
    }

    @Test
    void anEmptyResultIsReplayedAsEmptyNotSkipped() {
      DedupKey key = newKey();
      dedup.runOnce(key, null, TEXT, () -> "");

      assertThat(dedup.runOnce(key, null, TEXT, () -> "again"))
          .isEqualTo(new RunResult.Replayed<>(""));
    }

    @Test
    void aFailingWorkIsReleasedInReplayModeToo() {
      DedupKey key = newKey();

      assertThatThrownBy(
              () ->
                  dedup.runOnce(
                      key,
                      null,
                      TEXT,
                      () -> {
                        throw new IllegalArgumentException("bad request");
                      }))
          .isInstanceOf(IllegalArgumentException.class);

      assertThat(dedup.inspect(key)).isEqualTo(KeyState.ABSENT);
    }
  }

  @Nested
  class Listeners {
    @Test
    void hearEveryDecisionAndSettlement() {
      DedupKey a = newKey();
      DedupKey b = newKey();
      Fingerprint one = Fingerprint.sha256(new byte[] {1});

      Reservation ra = acquire(dedup, a); // pass
      dedup.reserve(a); // in flight
      ra.commit(); // committed
      dedup.reserve(a); // duplicate
      Reservation rb = ((Decision.Acquired) dedup.reserve(b, one)).reservation(); // pass
      rb.release(); // released
      Reservation rb2 = acquire(dedup, b); // pass
      time.advance(Duration.ofSeconds(30));
      rb2.commit(); // lease lost
      acquire(dedup, b).commit(); // lease expired (taken over), pass, committed
      dedup.reserve(b, Fingerprint.sha256(new byte[] {2})); // duplicate: b committed without fp
      time.advance(Duration.ofMinutes(10));
      acquire(dedup, a); // key expired, pass

      assertThat(events.events)
          .containsExactly(
              "pass " + id(a),
              "inFlight " + id(a),
              "committed " + id(a),
              "duplicate " + id(a),
              "pass " + id(b),
              "released " + id(b),
              "pass " + id(b),
              "leaseLost " + id(b),
              "leaseExpired " + id(b),
              "pass " + id(b),
              "committed " + id(b),
              "duplicate " + id(b),
              "keyExpired " + id(a),
              "pass " + id(a));
    }

    @Test
    void hearConflicts() {
      DedupKey key = newKey();
      dedup.runOnce(key, Fingerprint.sha256(new byte[] {1}), TEXT, () -> "r");
      events.events.clear();

      dedup.reserve(key, Fingerprint.sha256(new byte[] {2}));

      assertThat(events.events).containsExactly("conflict " + id(key));
    }

    @Test
    void aThrowingListenerNeverBreaksDeduplicationNorSilencesTheOthers() {
      // given a listener that throws from every callback, registered before a recording one
      DedupListener throwing =
          new DedupListener() {
            @Override
            public void onPass(Scope scope, DedupKey key) {
              throw new IllegalStateException("metrics backend down");
            }

            @Override
            public void onDuplicate(Scope scope, DedupKey key) {
              throw new IllegalStateException("metrics backend down");
            }

            @Override
            public void onCommitted(Scope scope, DedupKey key) {
              throw new IllegalStateException("metrics backend down");
            }

            @Override
            public void onReleased(Scope scope, DedupKey key) {
              throw new IllegalStateException("metrics backend down");
            }
          };
      RecordingListener after = new RecordingListener();
      Deduplicator d =
          Deduplicator.builder(store, SCOPE)
              .config(CONFIG)
              .timeSource(time)
              .listener(throwing)
              .listener(after)
              .build();
      DedupKey key = newKey();
      DedupKey failing = newKey();

      // when
      RunResult<String> ran = d.runOnce(key, () -> "ok");
      RunResult<String> skipped = d.runOnce(key, () -> "again");
      assertThatThrownBy(
              () ->
                  d.runOnce(
                      failing,
                      () -> {
                        throw new IllegalStateException("work");
                      }))
          .hasMessage("work");

      // then
      assertThat(ran).isEqualTo(new RunResult.Ran<>("ok", Settlement.COMMITTED));
      assertThat(skipped).isInstanceOf(RunResult.Skipped.class);
      assertThat(d.inspect(failing)).isEqualTo(KeyState.ABSENT);
      assertThat(after.events)
          .containsExactly(
              "pass " + id(key),
              "committed " + id(key),
              "duplicate " + id(key),
              "pass " + id(failing),
              "released " + id(failing));
    }

    @Test
    void aSingleThrowingListenerIsIsolatedToo() {
      Deduplicator d =
          Deduplicator.builder(store, SCOPE)
              .timeSource(time)
              .listener(
                  new DedupListener() {
                    @Override
                    public void onPass(Scope scope, DedupKey key) {
                      throw new IllegalStateException("boom");
                    }
                  })
              .build();

      assertThat(d.runOnce(newKey(), () -> 1))
          .isEqualTo(new RunResult.Ran<>(1, Settlement.COMMITTED));
    }
  }

  @Nested
  class Batches {
    @Test
    void reserveAllDecidesInOneStoreCallAndAcquiresARepeatedKeyOnce() {
      DedupKey a = newKey();
      DedupKey b = newKey();
      DedupKey committed = newKey();
      dedup.runOnce(committed, () -> 0);
      store.calls.clear();
      long leaseUntil = time.wallMillis() + 30_000;

      List<Decision> decisions = dedup.reserveAll(List.of(a, committed, b, a));

      assertThat(store.calls).containsExactly("reserveAll");
      assertThat(decisions).hasSize(4);
      assertThat(decisions.get(0)).isInstanceOf(Decision.Acquired.class);
      assertThat(decisions.get(1)).isEqualTo(new Decision.Duplicate(committed, null));
      assertThat(decisions.get(2)).isInstanceOf(Decision.Acquired.class);
      assertThat(decisions.get(3)).isEqualTo(new Decision.InFlight(a, leaseUntil));
      assertThat(decisions).extracting(Decision::key).containsExactly(a, committed, b, a);
    }

    @Test
    void commitAllCommitsInOneStoreCallInOrder() {
      List<DedupKey> ks = List.of(newKey(), newKey(), newKey());
      List<Reservation> held = new ArrayList<>();
      for (Decision d : dedup.reserveAll(ks)) {
        held.add(((Decision.Acquired) d).reservation());
      }
      store.calls.clear();

      List<Settlement> settled = dedup.commitAll(held);

      assertThat(store.calls).containsExactly("commitAll");
      assertThat(settled)
          .containsExactly(Settlement.COMMITTED, Settlement.COMMITTED, Settlement.COMMITTED);
      assertThat(held).extracting(Reservation::settlement).containsOnly(Settlement.COMMITTED);
      for (DedupKey k : ks) {
        assertThat(dedup.inspect(k)).isInstanceOf(KeyState.Committed.class);
      }
    }

    @Test
    void commitAllReportsALostLeasePerReservation() {
      Reservation early = acquire(dedup, newKey());
      time.advance(Duration.ofSeconds(20));
      Reservation late = acquire(dedup, newKey());
      time.advance(Duration.ofSeconds(10)); // the first lease ran out, the second did not

      assertThat(dedup.commitAll(List.of(early, late)))
          .containsExactly(Settlement.LEASE_LOST, Settlement.COMMITTED);
    }

    @Test
    void commitAllRejectsAReservationOfAnotherScopeAndCommitsNone() {
      // given
      Deduplicator other =
          Deduplicator.builder(store, Scope.of("shop-refunds")).timeSource(time).build();
      Reservation mine = acquire(dedup, newKey());
      Reservation foreign = acquire(other, newKey());

      // when / then
      assertThatThrownBy(() -> dedup.commitAll(List.of(mine, foreign)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("shop-refunds/dedup")
          .hasMessageContaining("shop-orders/dedup");
      assertThat(dedup.inspect(mine.key())).isInstanceOf(KeyState.InFlight.class);
      assertThat(mine.commit())
          .as("the rejected batch left it open")
          .isEqualTo(Settlement.COMMITTED);
      assertThat(foreign.commit()).isEqualTo(Settlement.COMMITTED);
    }

    @Test
    void commitAllRejectsAReservationOfAnotherDeduplicatorOnAnotherStore() {
      // given two deduplicators of the same scope on different stores
      Deduplicator elsewhere = dedup(new MapDedupStore());
      Reservation foreign = acquire(elsewhere, newKey());

      // when / then: committing it here would answer LEASE_LOST and leave it held over there
      assertThatThrownBy(() -> dedup.commitAll(List.of(foreign)))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(foreign.settlement()).isNull();
      assertThat(foreign.commit()).isEqualTo(Settlement.COMMITTED);
    }

    @Test
    void commitAllWithAnAlreadySettledReservationCommitsNoneAndReopensTheOthers() {
      Reservation open = acquire(dedup, newKey());
      Reservation settled = acquire(dedup, newKey());
      settled.release();

      assertThatThrownBy(() -> dedup.commitAll(List.of(open, settled)))
          .isInstanceOf(ReservationSettledException.class)
          .hasMessageContaining(settled.key().toHex());

      assertThat(dedup.inspect(open.key())).isInstanceOf(KeyState.InFlight.class);
      assertThat(open.settlement()).isNull();
      assertThat(open.commit()).isEqualTo(Settlement.COMMITTED);
    }

    @Test
    void commitAllWithTheSameReservationTwiceCommitsNone() {
      Reservation r = acquire(dedup, newKey());

      assertThatThrownBy(() -> dedup.commitAll(List.of(r, r)))
          .isInstanceOf(ReservationSettledException.class);

      assertThat(dedup.inspect(r.key())).isInstanceOf(KeyState.InFlight.class);
      assertThat(r.commit()).isEqualTo(Settlement.COMMITTED);
    }

    @Test
    void aStoreFailureInCommitAllReopensEveryReservationForARetry() {
      // given
      FlakyStore flaky = new FlakyStore();
      Deduplicator d = dedup(flaky);
      Reservation r1 = acquire(d, newKey());
      Reservation r2 = acquire(d, newKey());
      flaky.commitsFail = true;

      // when
      assertThatThrownBy(() -> d.commitAll(List.of(r1, r2)))
          .isInstanceOf(StoreUnavailableException.class);

      // then both are open and the retry commits them
      assertThat(r1.settlement()).isNull();
      assertThat(r2.settlement()).isNull();
      flaky.commitsFail = false;
      assertThat(d.commitAll(List.of(r1, r2)))
          .containsExactly(Settlement.COMMITTED, Settlement.COMMITTED);
    }

    @Test
    void anEmptyBatchIsEmpty() {
      assertThat(dedup.reserveAll(List.of())).isEmpty();
      assertThat(dedup.commitAll(List.of())).isEmpty();
    }
  }

  @Nested
  class Admin {
    @Test
    void forgetAndClearActOnTheDeduplicatorsScopeOnly() {
      Deduplicator other =
          Deduplicator.builder(store, Scope.of("shop-refunds")).timeSource(time).build();
      DedupKey key = newKey();
      dedup.runOnce(key, () -> 1);
      other.runOnce(key, () -> 2);
      dedup.runOnce(newKey(), () -> 3);

      assertThat(dedup.forget(key)).isTrue();
      assertThat(dedup.inspect(key)).isEqualTo(KeyState.ABSENT);
      assertThat(other.inspect(key)).isInstanceOf(KeyState.Committed.class);
      assertThat(dedup.clear()).isEqualTo(1);
      assertThat(other.inspect(key)).isInstanceOf(KeyState.Committed.class);
    }

    @Test
    void exposesItsScopeConfigAndStore() {
      assertThat(dedup.scope()).isEqualTo(SCOPE);
      assertThat(dedup.config()).isEqualTo(CONFIG);
      assertThat(dedup.store()).isSameAs(store);
    }

    @Test
    void theBuilderRejectsNulls() {
      assertThatThrownBy(() -> Deduplicator.builder(null, SCOPE))
          .isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> Deduplicator.builder(store, null))
          .isInstanceOf(NullPointerException.class);
      Deduplicator.Builder b = Deduplicator.builder(store, SCOPE);
      assertThatThrownBy(() -> b.config(null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> b.timeSource(null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> b.listener(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void requestsCarryTheConfigsLeaseAndWindowAndTheClocksTime() {
      DedupConfig fixed =
          DedupConfig.custom()
              .ttl(Duration.ofHours(1))
              .expiry(Expiry.FIXED)
              .lease(Duration.ofSeconds(5))
              .build();
      Deduplicator d = Deduplicator.builder(store, SCOPE).config(fixed).timeSource(time).build();
      DedupKey key = newKey();
      long t0 = time.wallMillis();

      Reservation r = acquire(d, key);
      assertThat(r.leaseUntil().toEpochMilli()).isEqualTo(t0 + 5_000);
      time.advance(Duration.ofSeconds(2));
      r.commit();
      time.advance(Duration.ofMinutes(30));
      d.reserve(key); // a fixed window does not move

      assertThat(d.inspect(key))
          .isEqualTo(new KeyState.Committed(t0 + 2_000, t0 + 2_000 + 3_600_000, null, null));
    }

    @Test
    void theReserveJudgesByTheLaggingClockAndTheCommitProvesTheLeaseByTheExactOne() {
      // given a clock whose lagging reading is 3 s behind its exact one
      TimeSource lagging =
          new TimeSource() {
            @Override
            public long wallMillis() {
              return time.wallMillis();
            }

            @Override
            public long laggingWallMillis() {
              return time.wallMillis() - 3_000;
            }

            @Override
            public long monotonicNanos() {
              return time.monotonicNanos();
            }
          };
      Duration window = Duration.ofMinutes(10);
      DedupConfig fixed =
          DedupConfig.custom()
              .ttl(window)
              .expiry(Expiry.FIXED)
              .lease(Duration.ofSeconds(30))
              .build();
      Deduplicator d = Deduplicator.builder(store, SCOPE).config(fixed).timeSource(lagging).build();
      DedupKey key = newKey();
      long t0 = time.wallMillis();

      // when: the lease (30 s) runs from the lagging reading
      Reservation r = acquire(d, key);
      assertThat(r.leaseUntil().toEpochMilli()).isEqualTo(t0 - 3_000 + 30_000);

      // then: 28 s later by the exact clock the lease has run out for the holder's commit, although
      // the lagging reading (25 s) is still inside it
      time.advance(Duration.ofSeconds(28));
      assertThat(r.commit()).isEqualTo(Settlement.LEASE_LOST);

      // and a committed key (its window runs from the exact commit time) stays a duplicate to the
      // lagging reserve until the window has passed by the lagging reading too
      DedupKey other = newKey();
      long committedAt = time.wallMillis();
      acquire(d, other).commit();
      time.advance(window.plusSeconds(1));
      assertThat(d.reserve(other)).isInstanceOf(Decision.Duplicate.class);
      time.advance(Duration.ofSeconds(3));
      assertThat(time.wallMillis() - 3_000).isGreaterThan(committedAt + window.toMillis());
      assertThat(d.reserve(other)).isInstanceOf(Decision.Acquired.class);
    }
  }
}
