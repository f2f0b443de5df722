package dev.idem.spi;

import org.jspecify.annotations.Nullable;

/** A store's answer to {@link DedupStore#reserve}: exactly one of four outcomes. */
public sealed interface ReserveResult
    permits ReserveResult.Acquired,
        ReserveResult.Duplicate,
        ReserveResult.InFlight,
        ReserveResult.Conflict {

  /**
   * The key was absent (or its lease or TTL had run out): it is now in flight under the request's
   * token.
   *
   * @param token the request's token, now holding the key
   * @param leaseUntilMillis when the lease runs out
   * @param replaced what, if anything, the reservation replaced
   */
  record Acquired(long token, long leaseUntilMillis, Replaced replaced) implements ReserveResult {}

  /**
   * The key is committed: the event is a duplicate. With a sliding TTL the window was restarted.
   *
   * @param committedAtMillis when the key was committed
   * @param expiresAtMillis when it expires now ({@link Long#MAX_VALUE}: never)
   * @param result the stored result, or null; callers must not modify it
   */
  record Duplicate(long committedAtMillis, long expiresAtMillis, byte @Nullable [] result)
      implements ReserveResult {}

  /**
   * Someone holds the key now (single flight): this event must not be processed.
   *
   * @param leaseUntilMillis when the holder's lease runs out
   */
  record InFlight(long leaseUntilMillis) implements ReserveResult {}

  /**
   * The key is committed with a different payload fingerprint (idempotency-key mode only).
   *
   * @param committedAtMillis when the key was committed
   */
  record Conflict(long committedAtMillis) implements ReserveResult {}

  /** What an {@link Acquired} reservation replaced. */
  enum Replaced {
    /** The key was absent. */
    NOTHING,
    /** A reservation whose lease had run out (its holder crashed or was too slow). */
    EXPIRED_LEASE,
    /** A committed key whose TTL had passed but was not yet removed. */
    EXPIRED_KEY
  }
}
