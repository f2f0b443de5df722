package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import org.junit.jupiter.api.Test;

/**
 * Stores without native expiry: {@code sweepExpired} removes entries whose lease or window ran out
 * and never a live one, including a sliding key whose window a recent hit moved. (Correctness never
 * depends on sweeping: a dead entry already reads as absent; sweeping returns its space.)
 */
abstract class SweepChecks extends ContractChecks {

  SweepChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void sweepRemovesDeadEntriesAndNeverLiveOnes() {
    // given two dead entries and four live ones, one of them kept alive by a recent hit
    fx.assumeNoNativeExpiry();
    Ttl oneMinuteFixed = new Ttl(60_000, Expiry.FIXED);
    Ttl twoMinutesSliding = new Ttl(120_000, Expiry.SLIDING);
    long t0 = now();
    DedupKey deadCommitted = newKey();
    DedupKey deadLease = newKey();
    DedupKey refreshed = newKey();
    DedupKey forever = newKey();
    DedupKey longWindow = newKey();
    DedupKey liveLease = newKey();
    commitNew(deadCommitted, null, oneMinuteFixed, utf8("gone"));
    acquire(deadLease);
    commitNew(refreshed, FP_A, twoMinutesSliding, utf8("kept"));
    commitNew(forever, null, Ttl.NONE, null);
    commitNew(longWindow, null, FIXED, null);
    advanceTo(t0 + 110_000);
    reserve(refreshed, newToken(), FP_A, twoMinutesSliding); // window now ends at t0 + 230 s
    long leaseHolder = acquire(liveLease);
    advanceTo(t0 + 150_000); // past the refreshed key's original end (t0 + 120 s)

    // when
    long swept = store().sweepExpired(now());

    // then the dead entries are gone (forget finds nothing) and the live ones are intact
    assertThat(swept).as("entries swept (two were dead)").isBetween(0L, 2L);
    assertThat(store().forget(scope(), deadCommitted)).as("forget of a swept key").isFalse();
    assertThat(store().forget(scope(), deadLease)).as("forget of a swept lease").isFalse();
    assertState(inspect(refreshed), committedState(t0, t0 + 230_000, FP_A, utf8("kept")));
    assertState(inspect(forever), committedState(t0, Long.MAX_VALUE, null, null));
    assertState(inspect(longWindow), committedState(t0, t0 + WINDOW, null, null));
    assertState(inspect(liveLease), inFlightState(t0 + 110_000, t0 + 110_000 + LEASE, null));
    assertSettle(commit(liveLease, leaseHolder), SettleResult.APPLIED, "commit after a sweep");
    assertThat(store().sweepExpired(now())).as("a second sweep at the same time").isZero();
  }

  @Test
  void sweepKeepsAnEntryUntilItsDeadline() {
    fx.assumeNoNativeExpiry();
    long t0 = now();
    DedupKey key = newKey();
    commitNew(key, null, new Ttl(60_000, Expiry.FIXED), utf8("r"));
    advanceTo(t0 + 60_000 - 1);

    store().sweepExpired(now());

    assertState(inspect(key), committedState(t0, t0 + 60_000, null, utf8("r")));
    assertThat(store().forget(scope(), key)).as("forget of a live key after a sweep").isTrue();
  }
}
