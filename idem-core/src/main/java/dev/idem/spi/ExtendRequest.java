package dev.idem.spi;

import dev.idem.DedupKey;
import dev.idem.Scope;
import java.util.Objects;

/**
 * Asks a store to renew a reservation's lease: applied only if the key is in flight under {@code
 * token} and its lease has not run out at {@code nowMillis}; then the lease runs until {@code
 * nowMillis + leaseMillis}, or stays at its current deadline if that is later (an extend never
 * shortens a lease). Otherwise nothing changes and the answer is {@link SettleResult#STALE}: a
 * holder whose lease lapsed cannot take its claim back.
 *
 * @param scope the dedup step
 * @param key the key
 * @param token the token the reservation was acquired with
 * @param nowMillis the caller's wall-clock time
 * @param leaseMillis how long from {@code nowMillis} the reservation should keep blocking the key;
 *     positive
 */
public record ExtendRequest(
    Scope scope, DedupKey key, long token, long nowMillis, long leaseMillis) {

  /**
   * Validates the fields.
   *
   * @throws IllegalArgumentException if the lease is not positive
   */
  public ExtendRequest {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    if (leaseMillis <= 0) {
      throw new IllegalArgumentException("lease must be positive, got " + leaseMillis + " ms");
    }
  }

  /**
   * Returns the deadline this request asks for (before the never-shorten rule).
   *
   * @return {@code nowMillis + leaseMillis}, saturating
   */
  public long leaseUntil() {
    long at = nowMillis + leaseMillis;
    return at < nowMillis ? Long.MAX_VALUE : at;
  }
}
