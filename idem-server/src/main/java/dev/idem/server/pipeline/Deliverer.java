package dev.idem.server.pipeline;

import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;

/** Delivers one event inline, retrying as the pipeline's retry policy says. */
@FunctionalInterface
public interface Deliverer {

  /**
   * Delivers, with retries.
   *
   * @param delivery the event
   * @return delivered, or failed after the last retry (or at a non-retryable failure)
   */
  DeliveryOutcome deliver(Delivery delivery);
}
