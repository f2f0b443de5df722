package dev.idem.server.deliver;

import java.time.Duration;
import java.util.Objects;
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
   * @param retryAfter how long downstream asked to wait before the next attempt (HTTP {@code
   *     Retry-After}), or null; retries wait at least this long, up to the policy's longest backoff
   */
  record Failed(String error, boolean retryable, @Nullable Duration retryAfter)
      implements DeliveryOutcome {

    /** Validates the fields. */
    public Failed {
      Objects.requireNonNull(error, "error");
      if (retryAfter != null && retryAfter.isNegative()) {
        retryAfter = Duration.ZERO;
      }
    }

    /**
     * A failure without a downstream wait hint.
     *
     * @param error what went wrong
     * @param retryable whether another attempt may succeed
     */
    public Failed(String error, boolean retryable) {
      this(error, retryable, null);
    }
  }
}
