package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import org.junit.jupiter.api.Test;

/**
 * Durable stores keep every key across a close and reopen: committed keys with their result,
 * fingerprint, window and committing token; in-flight reservations with their lease; and removals
 * (release, forget, clear) stay removed.
 */
abstract class DurabilityChecks extends ContractChecks {

  DurabilityChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void committedKeysWithResultsAndFingerprintsSurviveAReopen() {
    // given
    fx.assumeDurable();
    DedupKey sliding = newKey();
    DedupKey forever = newKey();
    DedupKey fixed = newKey();
    byte[] result = randomBytes(1024);
    long t0 = now();
    long slidingToken = commitNew(sliding, FP_A, SLIDING, result.clone());
    commitNew(forever, null, Ttl.NONE, null);
    commitNew(fixed, FP_B, FIXED, new byte[0]);

    // when
    DedupStore reopened = fx.reopen(store());
    advance(1_000);

    // then every field is back
    assertState(inspect(sliding), committedState(t0, t0 + WINDOW, FP_A, result));
    assertState(inspect(forever), committedState(t0, Long.MAX_VALUE, null, null));
    assertState(inspect(fixed), committedState(t0, t0 + WINDOW, FP_B, new byte[0]));
    assertAnswer(reserve(sliding, newToken(), FP_A), duplicate(t0, now() + WINDOW, result));
    assertAnswer(reserve(sliding, newToken(), FP_B), conflict(t0));
    assertAnswer(reserve(fixed, newToken(), FP_A, FIXED), conflict(t0));
    assertAnswer(reserve(forever, newToken(), null, Ttl.NONE), duplicate(t0, Long.MAX_VALUE, null));
    assertSettle(
        reopened.commit(commitRequest(sliding, slidingToken, SLIDING, null)),
        SettleResult.APPLIED,
        "a retried commit with the committing token, after the reopen");
  }

  @Test
  void inFlightReservationsSurviveAReopenWithTheirLease() {
    // given
    fx.assumeDurable();
    DedupKey settled = newKey();
    DedupKey abandoned = newKey();
    long t0 = now();
    long holder = acquire(settled, FP_A, SLIDING);
    long crashed = acquire(abandoned);

    // when
    fx.reopen(store());
    advance(10_000);

    // then the reservations still block, and their holders still hold them
    assertState(inspect(settled), inFlightState(t0, t0 + LEASE, FP_A));
    assertAnswer(reserve(settled, newToken()), inFlight(t0 + LEASE));
    assertSettle(commit(settled, holder, SLIDING, utf8("done")), SettleResult.APPLIED, "commit");
    assertState(inspect(settled), committedState(now(), now() + WINDOW, FP_A, utf8("done")));
    advanceTo(t0 + LEASE);
    long next = newToken();
    assertAnswer(reserve(abandoned, next), acquired(next, now() + LEASE, Replaced.EXPIRED_LEASE));
    assertSettle(commit(abandoned, crashed), SettleResult.STALE, "commit by the crashed holder");
  }

  @Test
  void removalsSurviveAReopen() {
    // given keys released, forgotten and cleared before the reopen
    fx.assumeDurable();
    Scope cleared = fx.newScope();
    DedupKey released = newKey();
    DedupKey forgotten = newKey();
    DedupKey inCleared = newKey();
    DedupKey kept = newKey();
    long t0 = now();
    assertSettle(release(released, acquire(released)), SettleResult.APPLIED, "release");
    commitNew(forgotten, SLIDING);
    store().forget(scope(), forgotten);
    store().reserve(new ReserveRequest(cleared, inCleared, null, newToken(), t0, LEASE, SLIDING));
    store().clear(cleared);
    commitNew(kept, FIXED);

    // when
    fx.reopen(store());

    // then none of them comes back
    assertState(inspect(released), KeyState.ABSENT);
    assertState(inspect(forgotten), KeyState.ABSENT);
    assertState(store().inspect(cleared, inCleared, now()), KeyState.ABSENT);
    assertState(inspect(kept), committedState(t0, t0 + WINDOW, null, null));
  }

  @Test
  void aStoreReopenedTwiceStillHasEverything() {
    fx.assumeDurable();
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, FP_A, FIXED, utf8("r"));

    fx.reopen(store());
    fx.reopen(store());

    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, utf8("r")));
  }
}
