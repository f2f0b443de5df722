package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.spi.KeyState;
import dev.idem.spi.SettleResult;
import org.junit.jupiter.api.Test;

/**
 * The transitions of DESIGN §3 one by one, each answer's fields, {@code inspect} of every state and
 * {@code forget} in every state.
 */
abstract class LifecycleChecks extends ContractChecks {

  LifecycleChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void reserveOfANewKeyAcquiresItWithTheRequestsTokenAndLease() {
    // given
    DedupKey key = newKey();
    long token = newToken();
    long t0 = now();

    // when
    var answer = reserve(key, token, FP_A);

    // then
    assertAnswer(answer, acquired(token, t0 + LEASE));
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, FP_A));
  }

  @Test
  void reserveOfAnInFlightKeyAnswersInFlightWithTheHoldersLease() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advance(10_000);

    // when
    var answer = reserve(key, newToken());

    // then: single flight, and the holder's reservation is untouched
    assertAnswer(answer, inFlight(t0 + LEASE));
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, null));
    assertSettle(commit(key, holder), SettleResult.APPLIED, "commit by the holder");
  }

  @Test
  void commitMakesTheKeyCommittedAtTheCommitTimeWithFingerprintAndResult() {
    // given
    DedupKey key = newKey();
    long token = acquire(key, FP_A, SLIDING);
    advance(5_000);
    long committedAt = now();
    byte[] result = utf8("{\"status\":201}");

    // when
    SettleResult settled = commit(key, token, SLIDING, result);

    // then: the window starts at the commit, not at the reserve
    assertSettle(settled, SettleResult.APPLIED, "commit by the holder");
    assertState(inspect(key), committedState(committedAt, committedAt + WINDOW, FP_A, result));
  }

  @Test
  void reserveOfACommittedKeyIsADuplicate() {
    // given
    DedupKey key = newKey();
    long committedAt = now();
    commitNew(key, null, FIXED, null);
    advance(1_000);

    // when
    var answer = reserve(key, newToken(), FIXED);

    // then
    assertAnswer(answer, duplicate(committedAt, committedAt + WINDOW, null));
    assertState(inspect(key), committedState(committedAt, committedAt + WINDOW, null, null));
  }

  @Test
  void releaseMakesTheKeyAbsentAndANewEventAcquiresIt() {
    // given
    DedupKey key = newKey();
    long token = acquire(key);
    advance(1_000);

    // when
    SettleResult released = release(key, token);

    // then
    assertSettle(released, SettleResult.APPLIED, "release by the holder");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE));
  }

  @Test
  void aKeyNeverSeenIsAbsent() {
    assertState(inspect(newKey()), KeyState.ABSENT);
  }

  @Test
  void inspectChangesNothing() {
    // given one key in each state
    DedupKey inFlight = newKey();
    DedupKey committed = newKey();
    long t0 = now();
    long holder = acquire(inFlight, FP_A, SLIDING);
    commitNew(committed, FP_B, SLIDING, utf8("r"));

    // when inspected many times
    for (int i = 0; i < 3; i++) {
      inspect(inFlight);
      inspect(committed);
      inspect(newKey());
    }

    // then the states are as they were and the holder still holds its key
    assertState(inspect(inFlight), inFlightState(t0, t0 + LEASE, FP_A));
    assertState(inspect(committed), committedState(t0, t0 + WINDOW, FP_B, utf8("r")));
    assertSettle(commit(inFlight, holder), SettleResult.APPLIED, "commit after inspects");
  }

  @Test
  void forgetOfAnAbsentKeyAnswersFalse() {
    assertThat(store().forget(scope(), newKey())).as("forget of an absent key").isFalse();
  }

  @Test
  void forgetOfAnInFlightKeyMakesItAbsentAndFencesTheHolder() {
    // given
    DedupKey key = newKey();
    long holder = acquire(key);

    // when
    boolean removed = store().forget(scope(), key);

    // then
    assertThat(removed).as("forget of an in-flight key").isTrue();
    assertState(inspect(key), KeyState.ABSENT);
    assertSettle(commit(key, holder), SettleResult.STALE, "commit by the forgotten holder");
    assertSettle(release(key, holder), SettleResult.STALE, "release by the forgotten holder");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE));
  }

  @Test
  void forgetOfAnInFlightKeyThenANewHolderLeavesTheOldHolderStale() {
    // given
    DedupKey key = newKey();
    long old = acquire(key);
    store().forget(scope(), key);
    long t1 = now();
    long current = acquire(key);

    // when
    SettleResult oldCommit = commit(key, old);
    SettleResult oldRelease = release(key, old);

    // then
    assertSettle(oldCommit, SettleResult.STALE, "commit by the forgotten holder");
    assertSettle(oldRelease, SettleResult.STALE, "release by the forgotten holder");
    assertState(inspect(key), inFlightState(t1, t1 + LEASE, null));
    assertSettle(commit(key, current), SettleResult.APPLIED, "commit by the new holder");
  }

  @Test
  void forgetOfACommittedKeyMakesTheNextEventNew() {
    // given
    DedupKey key = newKey();
    long committer = commitNew(key, FP_A, SLIDING, utf8("old result"));

    // when
    boolean removed = store().forget(scope(), key);

    // then: no trace is left, not even for the token that committed it
    assertThat(removed).as("forget of a committed key").isTrue();
    assertState(inspect(key), KeyState.ABSENT);
    assertSettle(commit(key, committer), SettleResult.STALE, "re-commit after forget");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next, FP_B), acquired(next, now() + LEASE));
    assertSettle(commit(key, next), SettleResult.APPLIED, "commit of the new event");
    assertState(inspect(key), committedState(now(), now() + WINDOW, FP_B, null));
  }

  @Test
  void forgetTwiceAnswersFalseTheSecondTime() {
    DedupKey key = newKey();
    commitNew(key, SLIDING);

    assertThat(store().forget(scope(), key)).as("first forget").isTrue();
    assertThat(store().forget(scope(), key)).as("second forget").isFalse();
  }
}
