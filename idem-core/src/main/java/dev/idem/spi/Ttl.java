package dev.idem.spi;

import dev.idem.Expiry;
import java.util.Objects;

/**
 * How long a committed key is kept, as stores see it.
 *
 * @param millis the window in milliseconds; {@code 0} means no TTL (kept until evicted or
 *     forgotten)
 * @param expiry whether duplicate hits restart the window ({@link Expiry#SLIDING}) or not
 */
public record Ttl(long millis, Expiry expiry) {
  /** No TTL: committed keys stay until evicted (memory store) or forgotten (durable stores). */
  public static final Ttl NONE = new Ttl(0, Expiry.SLIDING);

  /**
   * Validates the fields.
   *
   * @throws IllegalArgumentException if {@code millis} is negative
   */
  public Ttl {
    Objects.requireNonNull(expiry, "expiry");
    if (millis < 0) {
      throw new IllegalArgumentException("ttl must not be negative, got " + millis + " ms");
    }
  }

  /**
   * Returns whether keys expire at all.
   *
   * @return false for {@link #NONE}
   */
  public boolean expires() {
    return millis > 0;
  }

  /**
   * Returns when a key committed (or, for sliding expiry, hit) at {@code nowMillis} expires.
   *
   * @param nowMillis the commit or hit time
   * @return the expiry time, or {@link Long#MAX_VALUE} for no TTL (saturating, never overflows)
   */
  public long expiresAt(long nowMillis) {
    if (millis == 0) {
      return Long.MAX_VALUE;
    }
    long at = nowMillis + millis;
    return at < nowMillis ? Long.MAX_VALUE : at;
  }
}
