package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Lease renewal: an extend by the holder keeps single flight past the old deadline and the holder
 * still settles with its token; an extend that does not hold the key (another token, a lapsed
 * lease, a committed, released or absent key) answers STALE and changes nothing; a renewal never
 * shortens a lease.
 */
abstract class ExtendChecks extends ContractChecks {

  ExtendChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void anExtendKeepsSingleFlightPastTheOldDeadline() {
    // given a holder that renews its lease halfway through
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key, FP_A, SLIDING);
    advance(LEASE / 2);
    long t1 = now();

    // when
    SettleResult extended = extend(key, holder, LEASE);

    // then the lease runs from the renewal, and the old deadline frees nothing
    assertSettle(extended, SettleResult.APPLIED, "extend by the holder");
    assertState(inspect(key), inFlightState(t0, t1 + LEASE, FP_A));
    advanceTo(t0 + LEASE);
    assertAnswer(reserve(key, newToken()), inFlight(t1 + LEASE));
    advanceTo(t1 + LEASE - 1);
    assertAnswer(reserve(key, newToken()), inFlight(t1 + LEASE));
    assertState(inspect(key), inFlightState(t0, t1 + LEASE, FP_A));
  }

  @Test
  void anExtendedReservationCommitsWithItsTokenAfterTheOldDeadline() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key, FP_A, SLIDING);
    advance(LEASE - 1_000);
    assertSettle(extend(key, holder, LEASE), SettleResult.APPLIED, "extend by the holder");
    advanceTo(t0 + LEASE + 1_000);

    // when
    SettleResult committed = commit(key, holder, SLIDING, utf8("done"));

    // then
    assertSettle(committed, SettleResult.APPLIED, "commit after the old deadline");
    assertState(inspect(key), committedState(now(), now() + WINDOW, FP_A, utf8("done")));
    assertAnswer(reserve(key, newToken()), duplicate(now(), now() + WINDOW, utf8("done")));
  }

  @Test
  void anExtendedReservationReleasesWithItsTokenAfterTheOldDeadline() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advance(LEASE - 1_000);
    assertSettle(extend(key, holder, LEASE), SettleResult.APPLIED, "extend by the holder");
    advanceTo(t0 + LEASE + 1_000);

    // when
    SettleResult released = release(key, holder);

    // then the key is free at once, and nothing was taken over
    assertSettle(released, SettleResult.APPLIED, "release after the old deadline");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE));
  }

  @Test
  void extendWithAnotherTokenIsStaleAndChangesNothing() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advance(LEASE / 2);

    // when
    SettleResult stale = extend(key, holder ^ 0x5555_5555_5555_5555L, 10 * LEASE);

    // then the holder's lease still ends where it did, and then the key is free
    assertSettle(stale, SettleResult.STALE, "extend with a token that does not hold the key");
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, null));
    advanceTo(t0 + LEASE);
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
  }

  @Test
  void extendJustBeforeTheLeaseRunsOutApplies() {
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advanceTo(t0 + LEASE - 1);

    assertSettle(extend(key, holder, LEASE), SettleResult.APPLIED, "extend 1 ms before the end");
    assertState(inspect(key), inFlightState(t0, now() + LEASE, null));
  }

  @Test
  void extendWhenTheLeaseRanOutIsStaleAndDoesNotResurrectTheClaim() {
    // given a holder that stalled until its lease ended, and nobody took the key over
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advanceTo(t0 + LEASE);

    // when it tries to renew
    SettleResult late = extend(key, holder, LEASE);

    // then it no longer holds the key: a resend acquires it, and the old holder cannot commit
    assertSettle(late, SettleResult.STALE, "extend at the lease's end");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
    assertSettle(commit(key, holder), SettleResult.STALE, "commit by the lapsed holder");
    assertState(inspect(key), inFlightState(now(), now() + LEASE, null));
  }

  @Test
  void afterATakeoverTheOldTokenCannotExtend() {
    // given the first holder lapses and a second takes the key over
    DedupKey key = newKey();
    long t0 = now();
    long first = acquire(key);
    advanceTo(t0 + LEASE);
    long t1 = now();
    long second = newToken();
    assertAnswer(reserve(key, second), acquired(second, t1 + LEASE, Replaced.EXPIRED_LEASE));
    advance(1_000);

    // when
    SettleResult old = extend(key, first, 10 * LEASE);

    // then the second holder's lease is unchanged and it can still renew
    assertSettle(old, SettleResult.STALE, "extend by the taken-over holder");
    assertState(inspect(key), inFlightState(t1, t1 + LEASE, null));
    assertSettle(extend(key, second, LEASE), SettleResult.APPLIED, "extend by the new holder");
    assertState(inspect(key), inFlightState(t1, now() + LEASE, null));
  }

  @Test
  void extendOfACommittedKeyIsStaleAndChangesNothing() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long token = commitNew(key, FP_A, FIXED, utf8("r"));
    advance(1_000);

    // when even the committing token asks for a lease past the key's expiry
    SettleResult stale = extend(key, token, 2 * WINDOW);

    // then the key stays committed with its window
    assertSettle(stale, SettleResult.STALE, "extend of a committed key");
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, utf8("r")));
    advanceTo(t0 + WINDOW);
    assertState(inspect(key), KeyState.ABSENT);
  }

  @Test
  void extendOfAnAbsentOrReleasedKeyIsStaleAndCreatesNothing() {
    DedupKey never = newKey();
    assertSettle(extend(never, newToken(), LEASE), SettleResult.STALE, "extend of an absent key");
    assertState(inspect(never), KeyState.ABSENT);

    DedupKey released = newKey();
    long token = acquire(released);
    assertSettle(release(released, token), SettleResult.APPLIED, "release");
    assertSettle(extend(released, token, LEASE), SettleResult.STALE, "extend after release");
    assertState(inspect(released), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(released, next), acquired(next, now() + LEASE));
  }

  @Test
  void anExtendNeverShortensTheLease() {
    // given a reservation with a minute left
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advance(1_000);

    // when the holder asks for less than what is left
    SettleResult extended = extend(key, holder, 1_000);

    // then it is applied and the lease still ends where it did
    assertSettle(extended, SettleResult.APPLIED, "extend by the holder asking for less");
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, null));
    advanceTo(t0 + LEASE - 1);
    assertAnswer(reserve(key, newToken()), inFlight(t0 + LEASE));
  }

  @Test
  void aHolderThatRenewsEveryThirdOfItsLeaseKeepsTheKeyForManyLeases() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);

    // when it renews every LEASE / 3 for five leases
    for (int i = 0; i < 15; i++) {
      advance(LEASE / 3);
      assertSettle(extend(key, holder, LEASE), SettleResult.APPLIED, "renewal " + (i + 1));
      assertAnswer(reserve(key, newToken()), inFlight(now() + LEASE));
    }

    // then it still holds the key and commits it
    assertThat(now()).isGreaterThanOrEqualTo(t0 + 5 * LEASE);
    assertState(inspect(key), inFlightState(t0, now() + LEASE, null));
    assertSettle(commit(key, holder), SettleResult.APPLIED, "commit after the renewals");
  }

  @Test
  void extendAllAnswersEachRequestLikeExtend() {
    // given a held key, a key held by someone else, and a committed key
    DedupKey held = newKey();
    DedupKey other = newKey();
    DedupKey done = newKey();
    long t0 = now();
    long holder = acquire(held);
    acquire(other);
    long committer = commitNew(done, SLIDING);
    advance(1_000);

    // when
    List<SettleResult> answers =
        store()
            .extendAll(
                List.of(
                    extendRequest(held, holder, LEASE),
                    extendRequest(other, holder, LEASE),
                    extendRequest(done, committer, LEASE)));

    // then
    assertThat(answers)
        .as("extendAll of held, foreign and committed keys")
        .containsExactly(SettleResult.APPLIED, SettleResult.STALE, SettleResult.STALE);
    assertState(inspect(held), inFlightState(t0, now() + LEASE, null));
    assertState(inspect(other), inFlightState(t0, t0 + LEASE, null));
    assertState(inspect(done), committedState(t0, t0 + WINDOW, null, null));
  }
}
