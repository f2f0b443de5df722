package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Leases and TTLs against the manual clock: an entry is dead from its deadline on; a sliding window
 * restarts at each duplicate hit and only there; a fixed window ends at commit + TTL; no TTL keeps
 * the key.
 */
abstract class ExpiryChecks extends ContractChecks {

  ExpiryChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void aLeaseRunsOutAtItsEndAndTheKeyIsTakenOverAsAnExpiredLease() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    acquire(key, FP_A, SLIDING);

    // when / then: alive 1 ms before the end, gone at the end
    advanceTo(t0 + LEASE - 1);
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, FP_A));
    assertAnswer(reserve(key, newToken()), inFlight(t0 + LEASE));
    advanceTo(t0 + LEASE);
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next, FP_B), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
    assertState(inspect(key), inFlightState(now(), now() + LEASE, FP_B));
  }

  @Test
  void reservingAnInFlightKeyDoesNotExtendTheLease() {
    DedupKey key = newKey();
    long t0 = now();
    acquire(key);
    for (int i = 0; i < 3; i++) {
      advance(LEASE / 4);
      assertAnswer(reserve(key, newToken()), inFlight(t0 + LEASE));
    }
    advanceTo(t0 + LEASE);
    assertState(inspect(key), KeyState.ABSENT);
  }

  @Test
  void theLeaseIsIndependentOfTheTtl() {
    // given a lease much longer than the window
    DedupKey key = newKey();
    long t0 = now();
    long token = newToken();
    long longLease = Duration.ofHours(2).toMillis();
    var request = new ReserveRequest(scope(), key, null, token, t0, longLease, SLIDING);

    // when
    var answer = store().reserve(request);
    advanceTo(t0 + WINDOW + 1);

    // then the reservation outlives the window, and the window starts at the commit
    assertAnswer(answer, acquired(token, t0 + longLease));
    assertState(inspect(key), inFlightState(t0, t0 + longLease, null));
    assertSettle(commit(key, token), SettleResult.APPLIED, "commit after a window's length");
    assertState(inspect(key), committedState(now(), now() + WINDOW, null, null));
  }

  @Test
  void aSlidingWindowRestartsAtEveryDuplicateHit() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, null, SLIDING, utf8("r"));

    // when hit at 6 and 15 minutes (the second after the original window would have ended)
    advanceTo(t0 + 6 * 60_000);
    var first = reserve(key, newToken(), SLIDING);
    advanceTo(t0 + 15 * 60_000);
    var second = reserve(key, newToken(), SLIDING);

    // then each hit restarts the window from the hit
    assertAnswer(first, duplicate(t0, t0 + 6 * 60_000 + WINDOW, utf8("r")));
    assertAnswer(second, duplicate(t0, t0 + 15 * 60_000 + WINDOW, utf8("r")));
    assertState(inspect(key), committedState(t0, t0 + 15 * 60_000 + WINDOW, null, utf8("r")));
  }

  @Test
  void aSlidingKeyExpiresOnceQuietForTheWholeWindow() {
    // given a key hit once, 3 minutes after its commit
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, SLIDING);
    advanceTo(t0 + 3 * 60_000);
    reserve(key, newToken(), SLIDING);
    long deadline = t0 + 3 * 60_000 + WINDOW;

    // when / then
    advanceTo(deadline - 1);
    assertState(inspect(key), committedState(t0, deadline, null, null));
    advanceTo(deadline);
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next, SLIDING), acquired(next, now() + LEASE, Replaced.EXPIRED_KEY));
  }

  @Test
  void inspectDoesNotRefreshASlidingWindow() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, SLIDING);

    // when inspected during the window
    for (int minute = 1; minute < 10; minute++) {
      advanceTo(t0 + minute * 60_000L);
      assertState(inspect(key), committedState(t0, t0 + WINDOW, null, null));
    }

    // then it still ends where the commit put it
    advanceTo(t0 + WINDOW);
    assertState(inspect(key), KeyState.ABSENT);
  }

  @Test
  void aFixedWindowEndsAtCommitPlusTtlWhateverTheHits() {
    // given: reserved at t0, committed 20 s later
    DedupKey key = newKey();
    long t0 = now();
    long token = acquire(key, null, FIXED);
    advance(20_000);
    long committedAt = now();
    assertSettle(commit(key, token, FIXED, null), SettleResult.APPLIED, "commit");
    long deadline = committedAt + WINDOW;

    // when hit repeatedly, the last time 1 ms before the end
    advanceTo(t0 + 5 * 60_000);
    var early = reserve(key, newToken(), FIXED);
    advanceTo(deadline - 1);
    var late = reserve(key, newToken(), FIXED);

    // then the window never moved
    assertAnswer(early, duplicate(committedAt, deadline, null));
    assertAnswer(late, duplicate(committedAt, deadline, null));
    advanceTo(deadline);
    assertState(inspect(key), KeyState.ABSENT);
    long next = newToken();
    assertAnswer(reserve(key, next, FIXED), acquired(next, now() + LEASE, Replaced.EXPIRED_KEY));
  }

  @Test
  void theWindowStartsAtTheCommitNotAtTheReserve() {
    DedupKey key = newKey();
    long t0 = now();
    long token = acquire(key, null, FIXED);
    advance(50_000);
    assertSettle(commit(key, token, FIXED, null), SettleResult.APPLIED, "commit");

    advanceTo(t0 + WINDOW);
    assertState(inspect(key), committedState(t0 + 50_000, t0 + 50_000 + WINDOW, null, null));
  }

  @Test
  void withoutATtlTheKeyIsKept() {
    // given keys committed with no TTL, sliding or fixed
    DedupKey sliding = newKey();
    DedupKey fixed = newKey();
    Ttl noneFixed = new Ttl(0, Expiry.FIXED);
    long t0 = now();
    commitNew(sliding, null, Ttl.NONE, utf8("s"));
    commitNew(fixed, null, noneFixed, utf8("f"));

    // when ten years pass
    advance(Duration.ofDays(3653).toMillis());

    // then both are still duplicates, and hits do not give them a deadline
    assertAnswer(reserve(sliding, newToken(), Ttl.NONE), duplicate(t0, Long.MAX_VALUE, utf8("s")));
    assertAnswer(reserve(fixed, newToken(), noneFixed), duplicate(t0, Long.MAX_VALUE, utf8("f")));
    assertState(inspect(sliding), committedState(t0, Long.MAX_VALUE, null, utf8("s")));
    assertState(inspect(fixed), committedState(t0, Long.MAX_VALUE, null, utf8("f")));
  }

  @Test
  void aDuplicateHitAtTheCommitInstantKeepsTheSameDeadline() {
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, SLIDING);

    assertAnswer(reserve(key, newToken(), SLIDING), duplicate(t0, t0 + WINDOW, null));
    assertState(inspect(key), committedState(t0, t0 + WINDOW, null, null));
  }
}
