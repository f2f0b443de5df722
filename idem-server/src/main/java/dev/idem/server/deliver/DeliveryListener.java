package dev.idem.server.deliver;

import java.time.Duration;

/** Hears delivery outcomes, for metrics and logs. No-op defaults; must be fast and never throw. */
public interface DeliveryListener {

  /** A listener that does nothing. */
  DeliveryListener NOOP = new DeliveryListener() {};

  /**
   * An event was delivered.
   *
   * @param pipeline the pipeline id
   * @param attempts how many attempts it took
   * @param latency sync delivery: from the first attempt to success; async delivery: from the
   *     event's acceptance (its outbox entry's append) to success
   */
  default void onDelivered(String pipeline, int attempts, Duration latency) {}

  /**
   * An attempt failed and will be retried.
   *
   * @param pipeline the pipeline id
   * @param attempt the attempt that failed (1 = first)
   * @param error what went wrong
   */
  default void onRetry(String pipeline, int attempt, String error) {}

  /**
   * A delivery failed for good (no retries left, or not retryable).
   *
   * @param pipeline the pipeline id
   * @param attempts how many attempts were made
   * @param error the last error
   * @param deadLettered whether the event went to the dead letters (asynchronous mode)
   */
  default void onGaveUp(String pipeline, int attempts, String error, boolean deadLettered) {}
}
