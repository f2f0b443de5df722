package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * A pipeline's ordering step ({@code ordering}): events with the same ordering key are processed
 * one at a time.
 *
 * @param key the ordering key rule (e.g. {@code source.customer_id})
 * @param mode strict or best-effort
 * @param lockTtl how long a holder may keep a key's lock before it is presumed dead
 */
public record OrderingSettings(KeySpec key, OrderingMode mode, Duration lockTtl) {

  /** The default lock TTL: 60 seconds. */
  public static final Duration DEFAULT_LOCK_TTL = Duration.ofSeconds(60);

  /** The longest lock TTL: 24 hours. */
  public static final Duration MAX_LOCK_TTL = Duration.ofHours(24);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public OrderingSettings {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(lockTtl, "lockTtl");
    if (lockTtl.compareTo(Duration.ofMillis(1)) < 0 || lockTtl.compareTo(MAX_LOCK_TTL) > 0) {
      throw new IdemConfigException("lock_ttl must be from 1ms to 24h, got " + lockTtl);
    }
  }
}
