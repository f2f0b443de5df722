package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import org.junit.jupiter.api.Test;

/**
 * Tokens fence: a commit or release that does not hold the key (wrong token, lease run out, key
 * taken over, already committed) answers STALE and changes nothing.
 */
abstract class FencingChecks extends ContractChecks {

  FencingChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void commitWithAnotherTokenIsStaleAndChangesNothing() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key, FP_A, SLIDING);

    // when
    SettleResult stale = commit(key, holder + 1, SLIDING, utf8("intruder"));

    // then
    assertSettle(stale, SettleResult.STALE, "commit with a token that does not hold the key");
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, FP_A));
    assertSettle(commit(key, holder), SettleResult.APPLIED, "commit by the holder");
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, null));
  }

  @Test
  void releaseWithAnotherTokenIsStaleAndChangesNothing() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);

    // when
    SettleResult stale = release(key, holder ^ 0x5555_5555_5555_5555L);

    // then
    assertSettle(stale, SettleResult.STALE, "release with a token that does not hold the key");
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, null));
    assertAnswer(reserve(key, newToken()), inFlight(t0 + LEASE));
    assertSettle(release(key, holder), SettleResult.APPLIED, "release by the holder");
  }

  @Test
  void commitAndReleaseOfAKeyNeverReservedAreStaleAndCreateNothing() {
    DedupKey key = newKey();
    long token = newToken();

    assertSettle(commit(key, token), SettleResult.STALE, "commit of an absent key");
    assertSettle(release(key, token), SettleResult.STALE, "release of an absent key");
    assertState(inspect(key), KeyState.ABSENT);
    assertAnswer(reserve(key, token), acquired(token, now() + LEASE));
  }

  @Test
  void commitJustBeforeTheLeaseRunsOutApplies() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advanceTo(t0 + LEASE - 1);

    // when
    SettleResult settled = commit(key, holder);

    // then
    assertSettle(settled, SettleResult.APPLIED, "commit 1 ms before the lease ends");
    assertState(inspect(key), committedState(now(), now() + WINDOW, null, null));
  }

  @Test
  void commitWhenTheLeaseRanOutIsStaleEvenIfNobodyTookOver() {
    // given: the lease ends at t0 + LEASE (an entry is dead from its deadline on)
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advanceTo(t0 + LEASE);

    // when
    SettleResult late = commit(key, holder);

    // then: nothing was committed, the key is free for a resend
    assertSettle(late, SettleResult.STALE, "commit at the lease's end");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
  }

  @Test
  void releaseWhenTheLeaseRanOutIsStale() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long holder = acquire(key);
    advanceTo(t0 + LEASE + 30_000);

    // when
    SettleResult late = release(key, holder);

    // then
    assertSettle(late, SettleResult.STALE, "release after the lease ended");
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
  }

  @Test
  void afterATakeoverTheOldTokenIsStaleAndTheNewOneWorks() {
    // given: the first holder stalls past its lease and a second worker takes the key over
    DedupKey key = newKey();
    long t0 = now();
    long first = acquire(key);
    advanceTo(t0 + LEASE);
    long t1 = now();
    long second = newToken();
    assertAnswer(reserve(key, second), acquired(second, t1 + LEASE, Replaced.EXPIRED_LEASE));
    advance(1_000);

    // when the first holder wakes up
    SettleResult oldCommit = commit(key, first, SLIDING, utf8("late"));
    SettleResult oldRelease = release(key, first);

    // then it changes nothing, and the second holder still holds the key
    assertSettle(oldCommit, SettleResult.STALE, "commit by the taken-over holder");
    assertSettle(oldRelease, SettleResult.STALE, "release by the taken-over holder");
    assertState(inspect(key), inFlightState(t1, t1 + LEASE, null));
    assertSettle(commit(key, second, SLIDING, utf8("ok")), SettleResult.APPLIED, "new holder");
    assertState(inspect(key), committedState(now(), now() + WINDOW, null, utf8("ok")));
  }

  @Test
  void aRepeatedCommitWithTheCommittingTokenAppliesAndChangesNothing() {
    // given: a commit whose outcome the caller did not learn (e.g. a timeout)
    DedupKey key = newKey();
    long token = acquire(key, FP_A, SLIDING);
    advance(1_000);
    long committedAt = now();
    assertSettle(commit(key, token, SLIDING, utf8("first")), SettleResult.APPLIED, "commit");
    advance(2_000);

    // when it is retried, even with another result and window
    SettleResult retried = commit(key, token, FIXED, utf8("second"));

    // then it answers APPLIED and the key is exactly as the first commit left it
    assertSettle(retried, SettleResult.APPLIED, "repeated commit with the committing token");
    assertState(
        inspect(key), committedState(committedAt, committedAt + WINDOW, FP_A, utf8("first")));
  }

  @Test
  void aRepeatedCommitAfterTheKeyExpiredIsStale() {
    DedupKey key = newKey();
    long t0 = now();
    long token = commitNew(key, FIXED);
    advanceTo(t0 + WINDOW);

    assertSettle(commit(key, token), SettleResult.STALE, "re-commit after the TTL passed");
    assertState(inspect(key), KeyState.ABSENT);
  }

  @Test
  void commitWithAnotherTokenOnACommittedKeyIsStaleAndChangesNothing() {
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, FP_A, SLIDING, utf8("r"));
    advance(1_000);

    assertSettle(commit(key, newToken(), FIXED, null), SettleResult.STALE, "foreign commit");
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, utf8("r")));
  }

  @Test
  void releaseAfterCommitIsStaleAndTheKeyStaysCommitted() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    long token = commitNew(key, null, SLIDING, utf8("done"));

    // when the holder (wrongly) also releases
    SettleResult released = release(key, token);

    // then
    assertSettle(released, SettleResult.STALE, "release of a committed key");
    assertState(inspect(key), committedState(t0, t0 + WINDOW, null, utf8("done")));
  }

  @Test
  void releaseTwiceIsStaleTheSecondTimeAndDoesNotFreeANewHolder() {
    // given
    DedupKey key = newKey();
    long first = acquire(key);
    assertSettle(release(key, first), SettleResult.APPLIED, "release");
    long t1 = now();
    long second = acquire(key);

    // when the first holder releases again
    SettleResult again = release(key, first);

    // then the second holder keeps the key
    assertSettle(again, SettleResult.STALE, "second release with the same token");
    assertState(inspect(key), inFlightState(t1, t1 + LEASE, null));
    assertSettle(commit(key, second), SettleResult.APPLIED, "commit by the second holder");
  }
}
