package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;

/**
 * What every group of contract checks shares: the fixture, request builders on the test's scope at
 * the manual clock's time, and assertions that compare answers by content.
 *
 * <p>Every lease and TTL here is at least a minute: stores with native expiry (Redis {@code PX})
 * turn them into real-time durations, and a test must end long before any of them could fire. Time
 * moves only through {@link ManualTimeSource#advance}.
 */
abstract class ContractChecks {
  /** The lease of most reservations: one minute. */
  static final long LEASE = 60_000;

  /** The window of most committed keys: ten minutes. */
  static final long WINDOW = 10 * 60_000;

  static final Ttl SLIDING = new Ttl(WINDOW, Expiry.SLIDING);
  static final Ttl FIXED = new Ttl(WINDOW, Expiry.FIXED);
  static final Fingerprint FP_A = Fingerprint.sha256(utf8("{\"amount\":100}"));
  static final Fingerprint FP_B = Fingerprint.sha256(utf8("{\"amount\":200}"));

  final StoreFixture fx;
  private final SplittableRandom random = new SplittableRandom();

  ContractChecks(StoreFixture fx) {
    this.fx = fx;
  }

  /** Closes the test's stores before the concrete suite's own cleanup runs. */
  @AfterEach
  final void closeTheTestsStores() {
    fx.closeAll();
  }

  DedupStore store() {
    return fx.store();
  }

  Scope scope() {
    return fx.scope();
  }

  ManualTimeSource time() {
    return fx.time();
  }

  long now() {
    return fx.time().wallMillis();
  }

  void advance(long millis) {
    fx.time().advanceMillis(millis);
  }

  /** Moves the clock to {@code atMillis}, which must not be in the past. */
  void advanceTo(long atMillis) {
    fx.time().advanceMillis(atMillis - now());
  }

  DedupKey newKey() {
    return DedupKey.ofWords(
        random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong());
  }

  long newToken() {
    long t;
    do {
      t = random.nextLong();
    } while (t == 0);
    return t;
  }

  byte[] randomBytes(int length) {
    byte[] b = new byte[length];
    random.nextBytes(b);
    return b;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // ---- requests on the main scope at the current time ----

  ReserveRequest reserveRequest(DedupKey key, long token) {
    return reserveRequest(scope(), key, null, token, SLIDING);
  }

  ReserveRequest reserveRequest(
      Scope scope, DedupKey key, @Nullable Fingerprint fingerprint, long token, Ttl ttl) {
    return new ReserveRequest(scope, key, fingerprint, token, now(), LEASE, ttl);
  }

  ReserveResult reserve(DedupKey key, long token) {
    return store().reserve(reserveRequest(key, token));
  }

  ReserveResult reserve(DedupKey key, long token, Ttl ttl) {
    return store().reserve(reserveRequest(scope(), key, null, token, ttl));
  }

  ReserveResult reserve(DedupKey key, long token, @Nullable Fingerprint fingerprint) {
    return store().reserve(reserveRequest(scope(), key, fingerprint, token, SLIDING));
  }

  ReserveResult reserve(DedupKey key, long token, @Nullable Fingerprint fingerprint, Ttl ttl) {
    return store().reserve(reserveRequest(scope(), key, fingerprint, token, ttl));
  }

  CommitRequest commitRequest(DedupKey key, long token, Ttl ttl, byte @Nullable [] result) {
    return new CommitRequest(scope(), key, token, now(), ttl, result);
  }

  SettleResult commit(DedupKey key, long token) {
    return store().commit(commitRequest(key, token, SLIDING, null));
  }

  SettleResult commit(DedupKey key, long token, Ttl ttl, byte @Nullable [] result) {
    return store().commit(commitRequest(key, token, ttl, result));
  }

  ReleaseRequest releaseRequest(DedupKey key, long token) {
    return new ReleaseRequest(scope(), key, token, now());
  }

  SettleResult release(DedupKey key, long token) {
    return store().release(releaseRequest(key, token));
  }

  ExtendRequest extendRequest(DedupKey key, long token, long leaseMillis) {
    return new ExtendRequest(scope(), key, token, now(), leaseMillis);
  }

  SettleResult extend(DedupKey key, long token, long leaseMillis) {
    return store().extend(extendRequest(key, token, leaseMillis));
  }

  KeyState inspect(DedupKey key) {
    return store().inspect(scope(), key, now());
  }

  /** Reserves {@code key} (asserting it was acquired) and returns the token. */
  long acquire(DedupKey key) {
    return acquire(key, null, SLIDING);
  }

  long acquire(DedupKey key, @Nullable Fingerprint fingerprint, Ttl ttl) {
    long token = newToken();
    ReserveResult r = reserve(key, token, fingerprint, ttl);
    assertThat(r)
        .as("reserve of a new key %s in %s", key, scope())
        .isInstanceOf(ReserveResult.Acquired.class);
    return token;
  }

  /** Reserves and commits {@code key} now; returns the token that committed it. */
  long commitNew(DedupKey key, @Nullable Fingerprint fingerprint, Ttl ttl, byte @Nullable [] r) {
    long token = acquire(key, fingerprint, ttl);
    assertThat(commit(key, token, ttl, r)).as("commit of %s", key).isEqualTo(SettleResult.APPLIED);
    return token;
  }

  long commitNew(DedupKey key, Ttl ttl) {
    return commitNew(key, null, ttl, null);
  }

  // ---- assertions by content ----

  static void assertAnswer(ReserveResult actual, ReserveResult expected) {
    assertThat(Describe.answer(actual)).as("reserve answer").isEqualTo(Describe.answer(expected));
  }

  static void assertState(KeyState actual, KeyState expected) {
    assertThat(Describe.state(actual)).as("key state").isEqualTo(Describe.state(expected));
  }

  static void assertSettle(SettleResult actual, SettleResult expected, String what) {
    assertThat(actual).as(what).isEqualTo(expected);
  }

  static ReserveResult.Acquired acquired(long token, long leaseUntil) {
    return new ReserveResult.Acquired(token, leaseUntil, ReserveResult.Replaced.NOTHING);
  }

  static ReserveResult.Acquired acquired(
      long token, long leaseUntil, ReserveResult.Replaced replaced) {
    return new ReserveResult.Acquired(token, leaseUntil, replaced);
  }

  static ReserveResult.Duplicate duplicate(
      long committedAt, long expiresAt, byte @Nullable [] result) {
    return new ReserveResult.Duplicate(committedAt, expiresAt, result);
  }

  static ReserveResult.InFlight inFlight(long leaseUntil) {
    return new ReserveResult.InFlight(leaseUntil);
  }

  static ReserveResult.Conflict conflict(long committedAt) {
    return new ReserveResult.Conflict(committedAt);
  }

  static KeyState.InFlight inFlightState(
      long reservedAt, long leaseUntil, @Nullable Fingerprint fingerprint) {
    return new KeyState.InFlight(reservedAt, leaseUntil, fingerprint);
  }

  static KeyState.Committed committedState(
      long committedAt,
      long expiresAt,
      @Nullable Fingerprint fingerprint,
      byte @Nullable [] result) {
    return new KeyState.Committed(committedAt, expiresAt, fingerprint, result);
  }
}
