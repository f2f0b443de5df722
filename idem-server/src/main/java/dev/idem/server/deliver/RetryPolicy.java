package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

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

  /**
   * Returns how many attempts a delivery gets in all: the first plus the retries.
   *
   * @return {@code retries + 1}
   */
  public int maxAttempts() {
    return retries + 1;
  }

  /**
   * Returns the longest wait after a failed attempt, before jitter: {@code initialBackoff *
   * 2^(failedAttempt-1)}, capped at {@code maxBackoff}.
   *
   * @param failedAttempt the attempt that failed, 1 = the first
   * @return the cap of the wait
   */
  public Duration backoffCeiling(int failedAttempt) {
    long initial = initialBackoff.toMillis();
    long max = maxBackoff.toMillis();
    int shift = Math.min(Math.max(failedAttempt, 1) - 1, 62);
    return Duration.ofMillis(initial > (max >> shift) ? max : Math.max(initial << shift, 1));
  }

  /**
   * Returns the wait after a failed attempt, with full jitter: uniformly between zero and {@link
   * #backoffCeiling}. Full jitter spreads the retries of many failed events over the whole window,
   * so a recovering downstream is not hit by all of them at once. When downstream asked for a
   * longer wait ({@code Retry-After}), that wait is used instead, up to {@code maxBackoff}.
   *
   * @param failedAttempt the attempt that failed, 1 = the first
   * @param jitter a random number in {@code [0, 1)}
   * @param retryAfter the wait downstream asked for, or null
   * @return how long to wait before the next attempt
   */
  public Duration backoff(int failedAttempt, double jitter, @Nullable Duration retryAfter) {
    long ceiling = backoffCeiling(failedAttempt).toMillis();
    long wait = (long) (ceiling * Math.min(Math.max(jitter, 0.0), 1.0));
    if (retryAfter != null) {
      wait = Math.max(wait, Math.min(retryAfter.toMillis(), maxBackoff.toMillis()));
    }
    return Duration.ofMillis(wait);
  }
}
