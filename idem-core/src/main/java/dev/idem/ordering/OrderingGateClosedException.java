package dev.idem.ordering;

import dev.idem.IdemException;

/**
 * The {@link OrderingGate} was closed: it grants no more turns, and every event still waiting for
 * its key's turn when it closed gets this exception. The event was not run; hand it back to its
 * source (nack, requeue, answer 503) so it is redelivered to a gate that is open.
 */
public class OrderingGateClosedException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param orderingKey the key whose turn was requested
   */
  public OrderingGateClosedException(String orderingKey) {
    super(
        "ordering gate is closed: no turn for ordering key '"
            + orderingKey
            + "'; the event was not run, hand it back to its source so it is redelivered");
  }
}
