package dev.idem.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Decision;
import dev.idem.DedupConfig;
import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.RunResult;
import dev.idem.Scope;
import dev.idem.Settlement;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The store's lifecycle semantics, one rule per test, with caller-supplied times. */
class MemoryDedupStoreTest {
  static final Scope SCOPE = Scope.of("orders");
  static final Scope OTHER = Scope.of("payments");
  static final long LEASE = 1_000;
  static final Ttl HOUR = new Ttl(3_600_000, Expiry.SLIDING);

  final ManualTimeSource clock = new ManualTimeSource();
  final MemoryDedupStore store = MemoryDedupStore.builder().build();

  static DedupKey key(String name) {
    return DedupKey.ofDigest(
        dev.idem.internal.Sha256Words.newDigest().digest(name.getBytes(StandardCharsets.UTF_8)));
  }

  long now() {
    return clock.wallMillis();
  }

  ReserveResult reserve(Scope scope, DedupKey key, long token, Ttl ttl) {
    return store.reserve(new ReserveRequest(scope, key, null, token, now(), LEASE, ttl));
  }

  ReserveResult reserve(DedupKey key, long token) {
    return reserve(SCOPE, key, token, HOUR);
  }

  SettleResult commit(Scope scope, DedupKey key, long token, Ttl ttl) {
    return store.commit(new CommitRequest(scope, key, token, now(), ttl, null));
  }

  SettleResult commit(DedupKey key, long token) {
    return commit(SCOPE, key, token, HOUR);
  }

  SettleResult release(DedupKey key, long token) {
    return store.release(new ReleaseRequest(SCOPE, key, token, now()));
  }

  @Nested
  class Lifecycle {
    @Test
    void anAbsentKeyIsAcquiredAndThenInFlight() {
      DedupKey k = key("a");

      ReserveResult first = reserve(k, 1);
      ReserveResult second = reserve(k, 2);

      assertThat(first)
          .isEqualTo(new ReserveResult.Acquired(1, now() + LEASE, ReserveResult.Replaced.NOTHING));
      assertThat(second).isEqualTo(new ReserveResult.InFlight(now() + LEASE));
      assertThat(store.inspect(SCOPE, k, now()))
          .isEqualTo(new KeyState.InFlight(now(), now() + LEASE, null));
    }

    @Test
    void aCommittedKeyIsADuplicate() {
      DedupKey k = key("a");
      reserve(k, 1);
      long committedAt = now();

      SettleResult commit = commit(k, 1);
      clock.advanceMillis(10);
      ReserveResult again = reserve(k, 2);

      assertThat(commit).isEqualTo(SettleResult.APPLIED);
      assertThat(again)
          .isEqualTo(new ReserveResult.Duplicate(committedAt, now() + HOUR.millis(), null));
    }

    @Test
    void aReleasedKeyIsAbsentAndCanBeAcquiredAgain() {
      DedupKey k = key("a");
      reserve(k, 1);

      SettleResult released = release(k, 1);

      assertThat(released).isEqualTo(SettleResult.APPLIED);
      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
      assertThat(reserve(k, 2)).isInstanceOf(ReserveResult.Acquired.class);
      assertThat(store.size(SCOPE)).isEqualTo(1);
    }

    @Test
    void aCommittedKeyCannotBeReleased() {
      DedupKey k = key("a");
      reserve(k, 1);
      commit(k, 1);

      assertThat(release(k, 1)).isEqualTo(SettleResult.STALE);
      assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
    }

    @Test
    void aRepeatedCommitWithTheSameTokenIsAppliedWithoutChange() {
      DedupKey k = key("a");
      reserve(k, 1);
      commit(k, 1);
      KeyState before = store.inspect(SCOPE, k, now());
      clock.advanceMillis(50);

      SettleResult again = commit(k, 1);

      assertThat(again).isEqualTo(SettleResult.APPLIED);
      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(before);
    }

    @Test
    void theStoredResultIsReplayedAndIsACopyOfTheCallersBytes() {
      DedupKey k = key("a");
      reserve(k, 1);
      byte[] result = {1, 2, 3};
      store.commit(new CommitRequest(SCOPE, k, 1, now(), HOUR, result));
      result[0] = 9;

      ReserveResult dup = reserve(k, 2);

      assertThat(dup)
          .isInstanceOfSatisfying(
              ReserveResult.Duplicate.class, d -> assertThat(d.result()).containsExactly(1, 2, 3));
      assertThat(store.inspect(SCOPE, k, now()))
          .isInstanceOfSatisfying(
              KeyState.Committed.class, c -> assertThat(c.result()).containsExactly(1, 2, 3));
    }

    @Test
    void aDifferentFingerprintIsAConflictAndAMissingOneIsADuplicate() {
      DedupKey k = key("a");
      Fingerprint mine = Fingerprint.sha256(new byte[] {1});
      Fingerprint theirs = Fingerprint.sha256(new byte[] {2});
      store.reserve(new ReserveRequest(SCOPE, k, mine, 1, now(), LEASE, HOUR));
      long committedAt = now();
      commit(k, 1);
      clock.advanceMillis(5);

      ReserveResult other =
          store.reserve(new ReserveRequest(SCOPE, k, theirs, 2, now(), LEASE, HOUR));
      ReserveResult same = store.reserve(new ReserveRequest(SCOPE, k, mine, 3, now(), LEASE, HOUR));
      ReserveResult none = store.reserve(new ReserveRequest(SCOPE, k, null, 4, now(), LEASE, HOUR));

      assertThat(other).isEqualTo(new ReserveResult.Conflict(committedAt));
      assertThat(same).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(none).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(store.inspect(SCOPE, k, now()))
          .isInstanceOfSatisfying(
              KeyState.Committed.class, c -> assertThat(c.fingerprint()).isEqualTo(mine));
    }
  }

  @Nested
  class Fencing {
    @Test
    void aWrongTokenChangesNothing() {
      DedupKey k = key("a");
      reserve(k, 1);

      assertThat(commit(k, 2)).isEqualTo(SettleResult.STALE);
      assertThat(release(k, 2)).isEqualTo(SettleResult.STALE);
      assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.InFlight.class);
    }

    @Test
    void settlingAnAbsentKeyIsStale() {
      assertThat(commit(key("never"), 1)).isEqualTo(SettleResult.STALE);
      assertThat(release(key("never"), 1)).isEqualTo(SettleResult.STALE);
      assertThat(store.size(SCOPE)).isZero();
    }

    @Test
    void afterTheLeaseEndsTheHolderIsStaleAndAnotherWorkerTakesOver() {
      DedupKey k = key("a");
      reserve(k, 1);
      clock.advanceMillis(LEASE);

      assertThat(commit(k, 1)).isEqualTo(SettleResult.STALE);
      assertThat(release(k, 1)).isEqualTo(SettleResult.STALE);
      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
      assertThat(reserve(k, 2))
          .isEqualTo(
              new ReserveResult.Acquired(2, now() + LEASE, ReserveResult.Replaced.EXPIRED_LEASE));
      assertThat(commit(k, 1)).isEqualTo(SettleResult.STALE);
      assertThat(commit(k, 2)).isEqualTo(SettleResult.APPLIED);
      assertThat(store.size(SCOPE)).isEqualTo(1);
    }

    @Test
    void aForgottenReservationsHolderIsStale() {
      DedupKey k = key("a");
      reserve(k, 1);

      assertThat(store.forget(SCOPE, k)).isTrue();
      assertThat(store.forget(SCOPE, k)).isFalse();
      assertThat(commit(k, 1)).isEqualTo(SettleResult.STALE);
      assertThat(reserve(k, 2)).isInstanceOf(ReserveResult.Acquired.class);
    }

    @Test
    void aRepeatedCommitAfterTheKeyExpiredIsStale() {
      DedupKey k = key("a");
      reserve(k, 1);
      commit(SCOPE, k, 1, new Ttl(100, Expiry.FIXED));
      clock.advanceMillis(100);

      assertThat(commit(SCOPE, k, 1, new Ttl(100, Expiry.FIXED))).isEqualTo(SettleResult.STALE);
    }
  }

  @Nested
  class Expiry_ {
    @Test
    void aSlidingWindowIsRestartedByEachDuplicateHit() {
      Ttl ttl = new Ttl(100, Expiry.SLIDING);
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, ttl);
      commit(SCOPE, k, 1, ttl);

      for (int i = 0; i < 5; i++) {
        clock.advanceMillis(99);
        assertThat(reserve(SCOPE, k, 10 + i, ttl))
            .isInstanceOfSatisfying(
                ReserveResult.Duplicate.class,
                d -> assertThat(d.expiresAtMillis()).isEqualTo(now() + 100));
      }
      clock.advanceMillis(100);

      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void aFixedWindowIsNotExtendedByHits() {
      Ttl ttl = new Ttl(100, Expiry.FIXED);
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, ttl);
      long committedAt = now();
      commit(SCOPE, k, 1, ttl);
      clock.advanceMillis(60);
      reserve(SCOPE, k, 2, ttl);
      clock.advanceMillis(39);

      assertThat(reserve(SCOPE, k, 3, ttl))
          .isEqualTo(new ReserveResult.Duplicate(committedAt, committedAt + 100, null));
      clock.advanceMillis(1);
      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void anInspectionDoesNotRefreshASlidingWindow() {
      Ttl ttl = new Ttl(100, Expiry.SLIDING);
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, ttl);
      commit(SCOPE, k, 1, ttl);
      clock.advanceMillis(99);
      store.inspect(SCOPE, k, now());
      clock.advanceMillis(1);

      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void anExpiredKeyReadsAsAbsentAndItsSlotIsReused() {
      Ttl ttl = new Ttl(100, Expiry.SLIDING);
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, ttl);
      commit(SCOPE, k, 1, ttl);
      clock.advanceMillis(100);

      assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
      assertThat(store.size(SCOPE)).isEqualTo(1);
      assertThat(reserve(SCOPE, k, 2, ttl))
          .isEqualTo(
              new ReserveResult.Acquired(2, now() + LEASE, ReserveResult.Replaced.EXPIRED_KEY));
      assertThat(store.size(SCOPE)).isEqualTo(1);
    }

    @Test
    void withoutATtlACommittedKeyNeverExpires() {
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, Ttl.NONE);
      commit(SCOPE, k, 1, Ttl.NONE);
      clock.advance(Duration.ofDays(3650));

      assertThat(reserve(SCOPE, k, 2, Ttl.NONE))
          .isInstanceOfSatisfying(
              ReserveResult.Duplicate.class,
              d -> assertThat(d.expiresAtMillis()).isEqualTo(Long.MAX_VALUE));
    }

    @Test
    void sweepRemovesDeadEntriesOnlyAndReportsThem() {
      List<String> events = new ArrayList<>();
      MemoryDedupStore swept =
          MemoryDedupStore.builder()
              .listener(
                  new DedupListener() {
                    @Override
                    public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
                      events.add(scope + " " + key + " lease=" + leaseExpired);
                    }
                  })
              .build();
      Ttl ttl = new Ttl(100, Expiry.FIXED);
      DedupKey shortLived = key("short");
      DedupKey reserved = key("reserved");
      DedupKey longLived = key("long");
      swept.reserve(new ReserveRequest(SCOPE, shortLived, null, 1, now(), LEASE, ttl));
      swept.commit(new CommitRequest(SCOPE, shortLived, 1, now(), ttl, null));
      swept.reserve(new ReserveRequest(OTHER, reserved, null, 2, now(), 100, ttl));
      swept.reserve(new ReserveRequest(SCOPE, longLived, null, 3, now(), LEASE, HOUR));
      swept.commit(new CommitRequest(SCOPE, longLived, 3, now(), HOUR, null));
      clock.advanceMillis(100);

      long removed = swept.sweepExpired(now());

      assertThat(removed).isEqualTo(2);
      assertThat(events)
          .containsExactlyInAnyOrder(
              SCOPE + " " + shortLived + " lease=false", OTHER + " " + reserved + " lease=true");
      assertThat(swept.size(SCOPE)).isEqualTo(1);
      assertThat(swept.size(OTHER)).isZero();
      assertThat(swept.inspect(SCOPE, longLived, now())).isInstanceOf(KeyState.Committed.class);
      assertThat(swept.sweepExpired(now())).isZero();
    }
  }

  @Nested
  class ScopesAndAdmin {
    @Test
    void theSameKeyInTwoScopesIsTwoKeys() {
      DedupKey k = key("a");
      reserve(SCOPE, k, 1, HOUR);
      commit(SCOPE, k, 1, HOUR);

      assertThat(reserve(OTHER, k, 2, HOUR)).isInstanceOf(ReserveResult.Acquired.class);
    }

    @Test
    void clearRemovesOneScopeOnly() {
      for (int i = 0; i < 5; i++) {
        reserve(SCOPE, key("a" + i), 1, HOUR);
        commit(SCOPE, key("a" + i), 1, HOUR);
        reserve(OTHER, key("b" + i), 1, HOUR);
      }

      long cleared = store.clear(SCOPE);

      assertThat(cleared).isEqualTo(5);
      assertThat(store.size(SCOPE)).isZero();
      assertThat(store.inspect(SCOPE, key("a0"), now())).isEqualTo(KeyState.ABSENT);
      assertThat(store.size(OTHER)).isEqualTo(5);
      assertThat(store.inspect(OTHER, key("b0"), now())).isInstanceOf(KeyState.InFlight.class);
      assertThat(store.clear(SCOPE)).isZero();
      assertThat(reserve(SCOPE, key("a0"), 2, HOUR)).isInstanceOf(ReserveResult.Acquired.class);
    }

    @Test
    void readsOfAnUnknownScopeDoNotCreateIt() {
      assertThat(store.inspect(SCOPE, key("a"), now())).isEqualTo(KeyState.ABSENT);
      assertThat(store.forget(SCOPE, key("a"))).isFalse();
      assertThat(store.footprint(SCOPE)).containsExactly(0, 0);
    }

    @Test
    void batchesAnswerEachRequestInOrder() {
      DedupKey a = key("a");
      DedupKey b = key("b");
      DedupKey c = key("c");
      reserve(c, 9);
      commit(c, 9);

      List<ReserveResult> reserved =
          store.reserveAll(
              List.of(
                  new ReserveRequest(SCOPE, a, null, 1, now(), LEASE, HOUR),
                  new ReserveRequest(SCOPE, a, null, 2, now(), LEASE, HOUR),
                  new ReserveRequest(OTHER, a, null, 3, now(), LEASE, HOUR),
                  new ReserveRequest(SCOPE, b, null, 4, now(), LEASE, HOUR),
                  new ReserveRequest(SCOPE, c, null, 5, now(), LEASE, HOUR)));
      List<SettleResult> committed =
          store.commitAll(
              List.of(
                  new CommitRequest(SCOPE, a, 1, now(), HOUR, null),
                  new CommitRequest(SCOPE, a, 2, now(), HOUR, null),
                  new CommitRequest(OTHER, a, 3, now(), HOUR, null)));
      List<SettleResult> released =
          store.releaseAll(
              List.of(
                  new ReleaseRequest(SCOPE, b, 4, now()), new ReleaseRequest(SCOPE, b, 4, now())));

      assertThat(reserved)
          .extracting(r -> r.getClass().getSimpleName())
          .containsExactly("Acquired", "InFlight", "Acquired", "Acquired", "Duplicate");
      assertThat(committed)
          .containsExactly(SettleResult.APPLIED, SettleResult.STALE, SettleResult.APPLIED);
      assertThat(released).containsExactly(SettleResult.APPLIED, SettleResult.STALE);
      assertThat(store.inspect(SCOPE, b, now())).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void batchesLongerThanOneMonitorHoldAreComplete() {
      List<ReserveRequest> requests = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        requests.add(
            new ReserveRequest(
                i % 2 == 0 ? SCOPE : OTHER, key("k" + i / 4), null, 1 + i, now(), LEASE, HOUR));
      }

      List<ReserveResult> results = store.reserveAll(requests);

      assertThat(results).hasSize(300);
      assertThat(results.stream().filter(r -> r instanceof ReserveResult.Acquired)).hasSize(150);
      assertThat(store.size(SCOPE) + store.size(OTHER)).isEqualTo(150);
    }

    @Test
    void capabilitiesAndDescription() {
      assertThat(store.capabilities()).isEqualTo(new StoreCapabilities(true, false, false, true));
      assertThat(store.describe()).isEqualTo("memory(maxKeysPerScope=10000)");
    }

    @Test
    void afterCloseEveryOperationFailsAndMemoryIsDropped() {
      DedupKey k = key("a");
      reserve(k, 1);

      store.close();
      store.close();

      assertThatThrownBy(() -> reserve(k, 2))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      assertThatThrownBy(() -> store.inspect(SCOPE, k, now()))
          .isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> store.clear(SCOPE)).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> store.depth("q")).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(store::checkHealth).isInstanceOf(IllegalStateException.class);
      assertThat(store.footprint(SCOPE)).containsExactly(0, 0);
    }

    @Test
    void aThrowingListenerDoesNotBreakTheStore() {
      MemoryDedupStore s =
          MemoryDedupStore.builder()
              .maxKeysPerScope(1)
              .listener(
                  new DedupListener() {
                    @Override
                    public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
                      throw new IllegalStateException("listener bug");
                    }
                  })
              .build();
      s.reserve(new ReserveRequest(SCOPE, key("a"), null, 1, now(), LEASE, HOUR));
      s.commit(new CommitRequest(SCOPE, key("a"), 1, now(), HOUR, null));

      ReserveResult r = s.reserve(new ReserveRequest(SCOPE, key("b"), null, 2, now(), LEASE, HOUR));

      assertThat(r).isInstanceOf(ReserveResult.Acquired.class);
    }
  }

  @Nested
  class Configuration {
    @Test
    void boundsMustBePositive() {
      assertThatThrownBy(() -> MemoryDedupStore.builder().maxKeysPerScope(0))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("maxKeysPerScope must be between 1 and 1073741824, got 0");
      assertThatThrownBy(() -> MemoryDedupStore.builder().maxKeys(SCOPE, -5))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("maxKeys for scope orders/dedup");
      assertThatThrownBy(() -> MemoryDedupStore.builder().deadLettersPerQueue(0))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("deadLettersPerQueue must be at least 1");
      assertThatThrownBy(() -> new MemoryStoreConfig(10, Map.of(SCOPE, 0), 1))
          .isInstanceOf(IdemConfigException.class);
    }

    @Test
    void perScopeBoundsOverrideTheDefault() {
      MemoryStoreConfig config =
          MemoryDedupStore.builder().maxKeysPerScope(50).maxKeys(SCOPE, 7).config();

      assertThat(config.maxKeysFor(SCOPE)).isEqualTo(7);
      assertThat(config.maxKeysFor(OTHER)).isEqualTo(50);
      assertThat(MemoryStoreConfig.ofDefaults().maxKeysPerScope()).isEqualTo(10_000);
      assertThat(MemoryDedupStore.of(config).config()).isEqualTo(config);
    }

    @Test
    void theConfigIsACopy() {
      Map<Scope, Integer> overrides = new java.util.HashMap<>(Map.of(SCOPE, 3));
      MemoryStoreConfig config = new MemoryStoreConfig(10, overrides, 5);
      overrides.put(SCOPE, 4);

      assertThat(config.maxKeysFor(SCOPE)).isEqualTo(3);
    }
  }

  @Nested
  class ThroughTheDeduplicator {
    @Test
    void runOnceRunsOnceAndReplaysResults() {
      Deduplicator dedup =
          Deduplicator.builder(store, SCOPE)
              .config(DedupConfig.custom().ttl(Duration.ofMinutes(5)).build())
              .timeSource(clock)
              .build();
      DedupKey k = key("order-1");
      int[] runs = {0};

      RunResult<Void> first =
          dedup.runOnce(
              k,
              () -> {
                runs[0]++;
                return null;
              });
      RunResult<Void> second =
          dedup.runOnce(
              k,
              () -> {
                runs[0]++;
                return null;
              });

      assertThat(runs[0]).isEqualTo(1);
      assertThat(first).isInstanceOf(RunResult.Ran.class);
      assertThat(second)
          .isInstanceOfSatisfying(
              RunResult.Skipped.class,
              s -> assertThat(s.decision()).isInstanceOf(Decision.Duplicate.class));
    }

    @Test
    void failedWorkIsReleasedForARetry() {
      Deduplicator dedup = Deduplicator.builder(store, SCOPE).timeSource(clock).build();
      DedupKey k = key("order-2");
      Decision d = dedup.reserve(k);

      assertThat(d).isInstanceOf(Decision.Acquired.class);
      assertThat(((Decision.Acquired) d).reservation().release()).isEqualTo(Settlement.RELEASED);
      assertThat(dedup.reserve(k)).isInstanceOf(Decision.Acquired.class);
    }
  }
}
