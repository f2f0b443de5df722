package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.SettleResult;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Result replay (the stored bytes come back exactly, to every duplicate) and conflicts (a committed
 * key with another payload fingerprint; a null fingerprint on either side is a plain duplicate).
 */
abstract class ReplayChecks extends ContractChecks {

  ReplayChecks(StoreFixture fx) {
    super(fx);
  }

  static Stream<Arguments> results() {
    byte[] everyByte = new byte[256];
    for (int i = 0; i < 256; i++) {
      everyByte[i] = (byte) i;
    }
    byte[] large = new byte[64 * 1024];
    new SplittableRandom(64).nextBytes(large);
    byte[] zeros = new byte[1024];
    return Stream.of(
        Arguments.of("empty", new byte[0]),
        Arguments.of("one zero byte", new byte[] {0}),
        Arguments.of("UTF-8 text", utf8("{\"id\":\"ch_1\",\"amount\":100,\"note\":\"süß €\"}")),
        Arguments.of("every byte value", everyByte),
        Arguments.of("1 KiB of zeros", zeros),
        Arguments.of("64 KiB of random bytes", large));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("results")
  void aDuplicateGetsTheStoredResultByteForByte(String name, byte[] result) {
    // given
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, null, FIXED, result.clone());

    // when
    var first = reserve(key, newToken(), FIXED);
    var second = reserve(key, newToken(), FIXED);

    // then every duplicate gets it (replay does not consume it), and inspect shows it
    assertAnswer(first, duplicate(t0, t0 + WINDOW, result));
    assertAnswer(second, duplicate(t0, t0 + WINDOW, result));
    assertState(inspect(key), committedState(t0, t0 + WINDOW, null, result));
  }

  @Test
  void aCommitWithoutAResultReplaysNull() {
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, null, FIXED, null);

    assertAnswer(reserve(key, newToken(), FIXED), duplicate(t0, t0 + WINDOW, null));
    assertState(inspect(key), committedState(t0, t0 + WINDOW, null, null));
  }

  @Test
  void aKeyCommittedAgainAfterItExpiredDoesNotReplayTheOldResult() {
    // given a key that expired with a result
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, FP_A, FIXED, utf8("old"));
    advanceTo(t0 + WINDOW);

    // when it is reserved and committed again, without a result
    long token = newToken();
    assertAnswer(
        reserve(key, token, FP_B, FIXED), acquired(token, now() + LEASE, Replaced.EXPIRED_KEY));
    assertSettle(commit(key, token, FIXED, null), SettleResult.APPLIED, "second commit");

    // then nothing of the first life remains: no result, the new fingerprint
    long t1 = now();
    assertAnswer(reserve(key, newToken(), FP_B, FIXED), duplicate(t1, t1 + WINDOW, null));
    assertAnswer(reserve(key, newToken(), FP_A, FIXED), conflict(t1));
  }

  @Test
  void anotherFingerprintOnACommittedKeyIsAConflict() {
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, FP_A, FIXED, utf8("charged 100"));
    advance(1_000);

    assertAnswer(reserve(key, newToken(), FP_B, FIXED), conflict(t0));
    assertAnswer(
        reserve(key, newToken(), FP_A, FIXED), duplicate(t0, t0 + WINDOW, utf8("charged 100")));
  }

  @Test
  void aNullFingerprintOnEitherSideIsAPlainDuplicate() {
    // given one key committed with a fingerprint and one without
    DedupKey withFingerprint = newKey();
    DedupKey without = newKey();
    long t0 = now();
    commitNew(withFingerprint, FP_A, FIXED, null);
    commitNew(without, null, FIXED, null);

    // then a null request fingerprint, or a null stored one, never conflicts
    assertAnswer(
        reserve(withFingerprint, newToken(), null, FIXED), duplicate(t0, t0 + WINDOW, null));
    assertAnswer(reserve(without, newToken(), FP_B, FIXED), duplicate(t0, t0 + WINDOW, null));
    assertState(inspect(withFingerprint), committedState(t0, t0 + WINDOW, FP_A, null));
    assertState(inspect(without), committedState(t0, t0 + WINDOW, null, null));
  }

  @Test
  void aConflictDoesNotRefreshASlidingWindow() {
    // given
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, FP_A, SLIDING, null);

    // when a conflicting request arrives mid-window
    advanceTo(t0 + 6 * 60_000);
    var answer = reserve(key, newToken(), FP_B, SLIDING);

    // then the window is where the commit put it
    assertAnswer(answer, conflict(t0));
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, null));
    advanceTo(t0 + WINDOW);
    long next = newToken();
    assertAnswer(
        reserve(key, next, FP_B, SLIDING), acquired(next, now() + LEASE, Replaced.EXPIRED_KEY));
  }

  @Test
  void anotherFingerprintOnAnInFlightKeyIsInFlightNotAConflict() {
    DedupKey key = newKey();
    long t0 = now();
    acquire(key, FP_A, SLIDING);

    assertAnswer(reserve(key, newToken(), FP_B, SLIDING), inFlight(t0 + LEASE));
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, FP_A));
  }

  @Test
  void theFingerprintGivenAtReserveIsTheOneCommitted() {
    DedupKey key = newKey();
    long t0 = now();
    long token = acquire(key, FP_B, SLIDING);
    assertState(inspect(key), inFlightState(t0, t0 + LEASE, FP_B));

    assertSettle(commit(key, token, SLIDING, utf8("x")), SettleResult.APPLIED, "commit");
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_B, utf8("x")));
  }
}
