package dev.idem.spi;

import dev.idem.Fingerprint;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One key's stored state, as {@link DedupStateMachine} reads and writes it. Stores that apply the
 * state machine under a lock persist these fields; stores with native scripts keep the same fields
 * in their own layout.
 *
 * @param state in flight or committed (absent is "no entry")
 * @param token the fencing token that acquired it (kept after commit so a retried commit is
 *     idempotent)
 * @param sinceMillis when it was reserved (in flight) or committed
 * @param deadlineMillis when the lease runs out (in flight) or the key expires (committed); {@link
 *     Long#MAX_VALUE} for never
 * @param fingerprint the payload fingerprint, or null
 * @param result the stored result (committed only), or null
 */
public record StoredEntry(
    State state,
    long token,
    long sinceMillis,
    long deadlineMillis,
    @Nullable Fingerprint fingerprint,
    byte @Nullable [] result) {

  /** Validates the fields. */
  public StoredEntry {
    Objects.requireNonNull(state, "state");
  }

  /** The two stored states; "absent" is the lack of an entry. */
  public enum State {
    /** Reserved, lease running. */
    IN_FLIGHT,
    /** Committed, TTL running. */
    COMMITTED
  }

  /**
   * Returns whether the entry's lease or TTL has run out at {@code nowMillis}. A dead entry reads
   * as absent.
   *
   * @param nowMillis the time to judge by
   * @return true if {@code nowMillis >= deadlineMillis}
   */
  public boolean isDeadAt(long nowMillis) {
    return nowMillis >= deadlineMillis;
  }
}
