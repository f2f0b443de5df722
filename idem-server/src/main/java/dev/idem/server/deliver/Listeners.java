package dev.idem.server.deliver;

import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls a {@link DeliveryListener} so that a listener that throws, against its contract, cannot
 * break a delivery loop.
 */
final class Listeners {
  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);

  private Listeners() {}

  static void delivered(DeliveryListener l, String pipeline, int attempts, Duration latency) {
    try {
      l.onDelivered(pipeline, attempts, latency);
    } catch (RuntimeException e) {
      LOG.warn("delivery listener {} threw in onDelivered", l, e);
    }
  }

  static void retry(DeliveryListener l, String pipeline, int attempt, String error) {
    try {
      l.onRetry(pipeline, attempt, error);
    } catch (RuntimeException e) {
      LOG.warn("delivery listener {} threw in onRetry", l, e);
    }
  }

  static void gaveUp(
      DeliveryListener l, String pipeline, int attempts, String error, boolean deadLettered) {
    try {
      l.onGaveUp(pipeline, attempts, error, deadLettered);
    } catch (RuntimeException e) {
      LOG.warn("delivery listener {} threw in onGaveUp", l, e);
    }
  }
}
