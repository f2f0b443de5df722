package dev.idem;

import org.jspecify.annotations.Nullable;

/**
 * What {@link Deduplicator#reserve} decided for one event. Contention is a value, not an exception:
 * exactly one of the four cases below.
 */
public sealed interface Decision
    permits Decision.Acquired, Decision.Duplicate, Decision.InFlight, Decision.Conflict {

  /**
   * Returns the key the decision is about.
   *
   * @return the key
   */
  DedupKey key();

  /**
   * The event is new: process it, then settle the reservation ({@code commit} on success, {@code
   * release} on failure or when a later step drops the event).
   *
   * @param reservation the single-use handle that holds the key
   */
  record Acquired(Reservation reservation) implements Decision {
    @Override
    public DedupKey key() {
      return reservation.key();
    }
  }

  /**
   * The key is committed: the event is a duplicate and must not be processed again.
   *
   * @param key the key
   * @param result the result stored at commit (replay mode), or null; do not modify it
   */
  record Duplicate(DedupKey key, byte @Nullable [] result) implements Decision {}

  /**
   * Another worker holds the key now (single flight): do not process this event; a sender may retry
   * later.
   *
   * @param key the key
   * @param leaseUntilMillis when the holder's lease runs out at the latest
   */
  record InFlight(DedupKey key, long leaseUntilMillis) implements Decision {}

  /**
   * The key is committed with a different payload (idempotency-key mode): the sender reused a key
   * for another request.
   *
   * @param key the key
   */
  record Conflict(DedupKey key) implements Decision {}
}
