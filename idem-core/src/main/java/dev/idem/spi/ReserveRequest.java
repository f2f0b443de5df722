package dev.idem.spi;

import dev.idem.DedupKey;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Asks a store to reserve a key: one atomic step that answers {@link ReserveResult}.
 *
 * @param scope the dedup step
 * @param key the key
 * @param fingerprint the payload's fingerprint in idempotency-key mode, else null (a committed key
 *     with a different fingerprint answers {@link ReserveResult.Conflict})
 * @param token the fencing token to hold the reservation with if it is acquired: a random non-zero
 *     value chosen by the caller, unique per attempt
 * @param nowMillis the caller's wall-clock time; stores judge leases and TTLs by it
 * @param leaseMillis how long an acquired reservation blocks the key before another caller may take
 *     it over; positive
 * @param ttl the window for committed keys; a sliding window is refreshed by a duplicate hit
 */
public record ReserveRequest(
    Scope scope,
    DedupKey key,
    @Nullable Fingerprint fingerprint,
    long token,
    long nowMillis,
    long leaseMillis,
    Ttl ttl) {

  /**
   * Validates the fields.
   *
   * @throws IllegalArgumentException if the token is zero or the lease is not positive
   */
  public ReserveRequest {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(ttl, "ttl");
    if (token == 0) {
      throw new IllegalArgumentException("token must be non-zero (0 means 'no token')");
    }
    if (leaseMillis <= 0) {
      throw new IllegalArgumentException("lease must be positive, got " + leaseMillis + " ms");
    }
  }

  /**
   * Returns when an acquired reservation's lease runs out.
   *
   * @return {@code nowMillis + leaseMillis}, saturating
   */
  public long leaseUntil() {
    long at = nowMillis + leaseMillis;
    return at < nowMillis ? Long.MAX_VALUE : at;
  }
}
