package dev.idem;

/** How a {@link Reservation} ended. */
public enum Settlement {
  /** The work completed and the key is committed: later events with it are duplicates. */
  COMMITTED,
  /** The reservation was given up: the key is absent again and a resend may try. */
  RELEASED,
  /**
   * Nothing changed: the lease had run out and the store no longer held this reservation (another
   * worker may have taken the key over). The token fenced the stale call off.
   */
  LEASE_LOST
}
