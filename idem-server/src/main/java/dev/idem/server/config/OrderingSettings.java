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

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public OrderingSettings {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(lockTtl, "lockTtl");
    if (lockTtl.toMillis() < 1) {
      throw new IdemConfigException("lock_ttl must be at least 1ms, got " + lockTtl);
    }
  }
}
