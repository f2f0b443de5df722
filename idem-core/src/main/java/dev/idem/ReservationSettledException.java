package dev.idem;

import org.jspecify.annotations.Nullable;

/**
 * A {@link Reservation} was committed or released a second time. A reservation is single-use: the
 * first {@code commit} or {@code release} settles it, and any further call is a programming error.
 */
public class ReservationSettledException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param scope the reservation's scope
   * @param key the reservation's key
   * @param settlement how it was settled before, or null if another thread is settling it now
   */
  public ReservationSettledException(Scope scope, DedupKey key, @Nullable Settlement settlement) {
    super(
        "reservation of key "
            + key.toHex()
            + " in scope "
            + scope
            + (settlement == null
                ? " is being settled by another call"
                : " was already settled (" + settlement + ")")
            + "; a reservation is single-use: commit or release it once");
  }
}
