package dev.idem.spi;

import dev.idem.DedupKey;
import dev.idem.Scope;
import java.util.Objects;

/**
 * Asks a store to release a reservation: the key becomes absent, but only if it is in flight under
 * {@code token} and its lease has not run out; otherwise nothing changes and the answer is {@link
 * SettleResult#STALE}.
 *
 * @param scope the dedup step
 * @param key the key
 * @param token the token the reservation was acquired with
 * @param nowMillis the caller's wall-clock time
 */
public record ReleaseRequest(Scope scope, DedupKey key, long token, long nowMillis) {

  /** Validates the fields. */
  public ReleaseRequest {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
  }
}
