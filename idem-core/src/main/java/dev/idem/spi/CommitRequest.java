package dev.idem.spi;

import dev.idem.DedupKey;
import dev.idem.Scope;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Asks a store to commit a reservation: applied only if the key is in flight under {@code token}
 * and its lease has not run out at {@code nowMillis}; otherwise nothing changes and the answer is
 * {@link SettleResult#STALE}. Committing again with the same token after it was applied answers
 * {@link SettleResult#APPLIED} and changes nothing (so a commit whose outcome was unknown can be
 * retried).
 *
 * @param scope the dedup step
 * @param key the key
 * @param token the token the reservation was acquired with
 * @param nowMillis the caller's wall-clock time
 * @param ttl the window that starts now
 * @param result bytes to return to later duplicates (replay mode), or null
 */
public record CommitRequest(
    Scope scope, DedupKey key, long token, long nowMillis, Ttl ttl, byte @Nullable [] result) {

  /** Validates the fields. */
  public CommitRequest {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(ttl, "ttl");
  }
}
