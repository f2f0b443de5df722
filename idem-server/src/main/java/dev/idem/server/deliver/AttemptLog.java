package dev.idem.server.deliver;

import java.time.Instant;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * The one line a failed delivery attempt logs at WARN, the same for sync and async delivery:
 *
 * <pre>
 * delivery attempt failed pipeline=shop-orders idempotency_key=shop-orders:9f2c... attempt=2/9
 *     next_attempt=2026-05-04T10:15:31.500Z: HTTP 503 from POST http://orders.internal/hook: ...
 * delivery attempt failed pipeline=shop-orders idempotency_key=shop-orders:9f2c... attempt=9/9
 *     next_attempt=none (dead letter): HTTP 503 from POST http://orders.internal/hook: ...
 * </pre>
 *
 * The idempotency key ({@code <pipeline>:<key digest>}) is what downstream received, so a line can
 * be matched with downstream's own logs; the error is the sink's (status, redacted URL, the first
 * characters of the answer).
 */
final class AttemptLog {
  private AttemptLog() {}

  /**
   * Logs one failed attempt.
   *
   * @param log where to log
   * @param delivery the event
   * @param attempt the attempt that failed, 1 = the first
   * @param maxAttempts how many attempts the policy allows
   * @param error what went wrong
   * @param nextAttempt when the next attempt is due, or null if there is none
   * @param ending why there is no next attempt (e.g. {@code dead letter}); ignored if there is one
   */
  static void failed(
      Logger log,
      Delivery delivery,
      int attempt,
      int maxAttempts,
      String error,
      @Nullable Instant nextAttempt,
      String ending) {
    if (!log.isWarnEnabled()) {
      return;
    }
    log.warn(
        "delivery attempt failed pipeline={} idempotency_key={} attempt={}/{} next_attempt={}: {}",
        delivery.pipeline(),
        delivery.idempotencyKey(),
        attempt,
        maxAttempts,
        nextAttempt == null ? "none (" + ending + ")" : nextAttempt.toString(),
        error);
  }
}
