package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Decision;
import dev.idem.DedupConfig;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Expiry;
import dev.idem.FanOut;
import dev.idem.Reservation;
import dev.idem.ReservationSettledException;
import dev.idem.ResultCodec;
import dev.idem.RunResult;
import dev.idem.Settlement;
import dev.idem.spi.KeyState;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The {@link Deduplicator} facade on the store under test: run once, release on failure, replay,
 * single flight, lease loss, batches, single-use reservations and fan-out, end to end.
 */
abstract class FacadeChecks extends ContractChecks {
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

  FacadeChecks(StoreFixture fx) {
    super(fx);
  }

  private Deduplicator dedup() {
    DedupConfig config =
        DedupConfig.custom()
            .ttl(Duration.ofMillis(WINDOW))
            .expiry(Expiry.SLIDING)
            .lease(Duration.ofMillis(LEASE))
            .build();
    return Deduplicator.builder(store(), scope()).config(config).timeSource(time()).build();
  }

  @Test
  void runOnceRunsTheWorkOnceAndCommits() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    AtomicInteger runs = new AtomicInteger();

    // when the same event arrives twice
    RunResult<Integer> first = dedup.runOnce(key, runs::incrementAndGet);
    RunResult<Integer> second = dedup.runOnce(key, runs::incrementAndGet);

    // then
    assertThat(first).isEqualTo(new RunResult.Ran<>(1, Settlement.COMMITTED));
    assertThat(second).isInstanceOf(RunResult.Skipped.class);
    assertThat(((RunResult.Skipped<Integer>) second).decision())
        .isInstanceOf(Decision.Duplicate.class);
    assertThat(runs).hasValue(1);
    assertState(dedup.inspect(key), committedState(now(), now() + WINDOW, null, null));
  }

  @Test
  void runOnceReleasesWhenTheWorkFailsSoTheResendRuns() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    IllegalStateException failure = new IllegalStateException("downstream said no");

    // when
    assertThatThrownBy(
            () ->
                dedup.runOnce(
                    key,
                    () -> {
                      throw failure;
                    }))
        .isSameAs(failure);

    // then
    assertState(dedup.inspect(key), KeyState.ABSENT);
    assertThat(dedup.runOnce(key, () -> "second try"))
        .isEqualTo(new RunResult.Ran<>("second try", Settlement.COMMITTED));
  }

  @Test
  void runOnceWithACodecReplaysTheStoredResultAndRejectsAnotherPayload() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    AtomicInteger runs = new AtomicInteger();

    // when
    RunResult<String> first =
        dedup.runOnce(key, FP_A, TEXT, () -> "charge ch_" + runs.incrementAndGet());
    RunResult<String> replayed =
        dedup.runOnce(key, FP_A, TEXT, () -> "charge ch_" + runs.incrementAndGet());
    RunResult<String> conflicting =
        dedup.runOnce(key, FP_B, TEXT, () -> "charge ch_" + runs.incrementAndGet());

    // then
    assertThat(first).isEqualTo(new RunResult.Ran<>("charge ch_1", Settlement.COMMITTED));
    assertThat(replayed).isEqualTo(new RunResult.Replayed<>("charge ch_1"));
    assertThat(conflicting).isEqualTo(new RunResult.Skipped<>(new Decision.Conflict(key)));
    assertThat(runs).hasValue(1);
  }

  @Test
  void anEventWhoseKeyIsInFlightIsSkipped() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    long t0 = now();
    Reservation holder = ((Decision.Acquired) dedup.reserve(key)).reservation();
    AtomicInteger runs = new AtomicInteger();

    // when
    advance(1_000);
    RunResult<Integer> skipped = dedup.runOnce(key, runs::incrementAndGet);

    // then
    assertThat(skipped).isEqualTo(new RunResult.Skipped<>(new Decision.InFlight(key, t0 + LEASE)));
    assertThat(runs).hasValue(0);
    assertThat(holder.commit()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void aSettlementAfterTheLeaseRanOutIsLeaseLostAndTheKeyIsFree() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    Reservation slow = ((Decision.Acquired) dedup.reserve(key)).reservation();

    // when the work outlasts its lease
    advance(LEASE);
    Settlement settlement = slow.commit();

    // then nothing was committed and a resend passes
    assertThat(settlement).isEqualTo(Settlement.LEASE_LOST);
    assertThat(slow.settlement()).isEqualTo(Settlement.LEASE_LOST);
    assertThat(dedup.reserve(key)).isInstanceOf(Decision.Acquired.class);
  }

  @Test
  void reserveAllAcquiresAKeyTwiceInTheBatchOnceAndCommitAllCommitsThem() {
    // given
    Deduplicator dedup = dedup();
    DedupKey a = newKey();
    DedupKey b = newKey();
    long t0 = now();

    // when
    List<Decision> decisions = dedup.reserveAll(List.of(a, b, a));
    List<Reservation> held =
        decisions.stream()
            .filter(Decision.Acquired.class::isInstance)
            .map(d -> ((Decision.Acquired) d).reservation())
            .toList();
    List<Settlement> settled = dedup.commitAll(held);

    // then
    assertThat(decisions.get(0)).isInstanceOf(Decision.Acquired.class);
    assertThat(decisions.get(1)).isInstanceOf(Decision.Acquired.class);
    assertThat(decisions.get(2)).isEqualTo(new Decision.InFlight(a, t0 + LEASE));
    assertThat(held).extracting(Reservation::key).containsExactly(a, b);
    assertThat(settled).containsExactly(Settlement.COMMITTED, Settlement.COMMITTED);
    assertThat(dedup.reserveAll(List.of(b, a)))
        .containsExactly(new Decision.Duplicate(b, null), new Decision.Duplicate(a, null));
  }

  @Test
  void aReservationSettlesOnceAndASecondSettlementNamesTheKey() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    Reservation r = ((Decision.Acquired) dedup.reserve(key)).reservation();
    assertThat(r.commit()).isEqualTo(Settlement.COMMITTED);

    // when / then
    assertThatThrownBy(r::commit)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(key.toHex());
    assertThatThrownBy(r::release)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(key.toHex());
    assertThatThrownBy(() -> dedup.commitAll(List.of(r)))
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(key.toHex());
    assertThat(r.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.inspect(key)).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aFanOutCommitsTheParentOnlyAfterEveryChildSucceeded() {
    // given
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    FanOut fanOut = ((Decision.Acquired) dedup.reserve(key)).reservation().fanOut(3);
    FanOut.Child c1 = fanOut.child();
    FanOut.Child c2 = fanOut.child();
    FanOut.Child c3 = fanOut.child();

    // when / then
    c1.succeeded();
    c2.succeeded();
    assertThat(dedup.inspect(key))
        .as("after two of three children")
        .isInstanceOf(KeyState.InFlight.class);
    c3.succeeded();
    assertThat(dedup.inspect(key)).as("after every child").isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aFanOutReleasesTheParentWhenAChildFails() {
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    FanOut fanOut = ((Decision.Acquired) dedup.reserve(key)).reservation().fanOut(2);
    FanOut.Child ok = fanOut.child();
    FanOut.Child failing = fanOut.child();

    ok.succeeded();
    failing.failed();

    assertState(dedup.inspect(key), KeyState.ABSENT);
    assertThat(dedup.reserve(key)).isInstanceOf(Decision.Acquired.class);
  }

  @Test
  void forgetAndClearGoThroughToTheStore() {
    Deduplicator dedup = dedup();
    DedupKey a = newKey();
    DedupKey b = newKey();
    dedup.runOnce(a, () -> 1);
    dedup.runOnce(b, () -> 2);

    assertThat(dedup.forget(a)).isTrue();
    assertThat(dedup.reserve(a)).isInstanceOf(Decision.Acquired.class);
    assertThat(dedup.clear()).isEqualTo(2);
    assertState(dedup.inspect(a), KeyState.ABSENT);
    assertState(dedup.inspect(b), KeyState.ABSENT);
  }

  @Test
  void aReservationThatRenewsItsLeaseKeepsSingleFlightAndCommits() {
    // given a holder halfway through its lease
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    long t0 = now();
    Reservation holder = ((Decision.Acquired) dedup.reserve(key)).reservation();
    advance(LEASE / 2);

    // when it renews
    boolean renewed = holder.extend();

    // then a resend after the old deadline is still in flight, and the holder commits
    assertThat(renewed).as("extend by the holder").isTrue();
    assertThat(holder.leaseUntil().toEpochMilli()).isEqualTo(t0 + LEASE / 2 + LEASE);
    advanceTo(t0 + LEASE);
    assertThat(dedup.reserve(key)).isInstanceOf(Decision.InFlight.class);
    assertThat(holder.commit()).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.reserve(key)).isInstanceOf(Decision.Duplicate.class);
  }

  @Test
  void aReservationWhoseLeaseRanOutCannotRenewIt() {
    // given a holder that stalled past its lease, and a resend that took the key over
    Deduplicator dedup = dedup();
    DedupKey key = newKey();
    Reservation slow = ((Decision.Acquired) dedup.reserve(key)).reservation();
    advance(LEASE);
    Reservation next = ((Decision.Acquired) dedup.reserve(key)).reservation();

    // when the slow holder tries to renew
    boolean renewed = slow.extend(Duration.ofMillis(10 * LEASE));

    // then it is refused, the new holder keeps its own lease, and the slow one's commit is fenced
    assertThat(renewed).as("extend by the taken-over holder").isFalse();
    assertState(dedup.inspect(key), inFlightState(now(), now() + LEASE, null));
    assertThat(slow.commit()).isEqualTo(Settlement.LEASE_LOST);
    assertThat(next.commit()).isEqualTo(Settlement.COMMITTED);
  }
}
