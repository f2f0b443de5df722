package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * How failed deliveries are retried: up to {@code retries} more attempts after the first, waiting
 * an exponentially growing backoff ({@code initialBackoff * 2^(attempt-1)}, capped at {@code
 * maxBackoff}) with full jitter.
 *
 * @param retries attempts after the first; 0 = no retry
 * @param initialBackoff the first wait
 * @param maxBackoff the longest wait
 */
public record RetryPolicy(int retries, Duration initialBackoff, Duration maxBackoff) {

  /** 8 retries, 500ms growing to at most 5 minutes. */
  public static final RetryPolicy DEFAULT =
      new RetryPolicy(8, Duration.ofMillis(500), Duration.ofMinutes(5));

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if a value is out of range
   */
  public RetryPolicy {
    Objects.requireNonNull(initialBackoff, "initialBackoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    if (retries < 0 || retries > 100) {
      throw new IdemConfigException("deliver retries must be 0 to 100, got " + retries);
    }
    if (initialBackoff.isNegative() || initialBackoff.isZero()) {
      throw new IdemConfigException("retry backoff must be positive, got " + initialBackoff);
    }
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IdemConfigException(
          "retry max backoff " + maxBackoff + " is below the initial backoff " + initialBackoff);
    }
  }
}
