package dev.idem.server.deliver;

import org.jspecify.annotations.Nullable;

/** What one delivery attempt (or a whole retried delivery) came to. */
public sealed interface DeliveryOutcome permits DeliveryOutcome.Delivered, DeliveryOutcome.Failed {

  /**
   * Downstream accepted the event.
   *
   * @param status the HTTP status, or 0 for sinks without one
   * @param responseBody the response body (replay mode stores it), or null; do not modify
   * @param contentType the response's content type, or null
   */
  record Delivered(int status, byte @Nullable [] responseBody, @Nullable String contentType)
      implements DeliveryOutcome {}

  /**
   * Downstream did not accept the event.
   *
   * @param error what went wrong, for logs and dead letters
   * @param retryable whether another attempt may succeed (timeouts, 5xx, 429, connection errors:
   *     yes; 4xx other than 408/429: no)
   */
  record Failed(String error, boolean retryable) implements DeliveryOutcome {}
}
