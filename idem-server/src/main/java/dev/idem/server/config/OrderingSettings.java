package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A pipeline's ordering step ({@code ordering}): events with the same ordering key are processed
 * one at a time.
 *
 * @param key the ordering key rule (e.g. {@code source.customer_id})
 * @param mode strict or best-effort
 * @param lockTtl how long a holder may keep a key's lock before it is presumed dead
 * @param sequence the field path of the event's sequence number ({@code ordering.sequence}, e.g.
 *     {@code body.version}): sequence mode drops stale events and holds early ones; null for none
 * @param gapTimeout how long an early event waits for the gap before it is processed anyway
 * @param maxAttempts how many times one event of a key is tried before the key gives it up (or
 *     blocks, per {@code onFailure})
 * @param onFailure what a key does with an event that failed {@code maxAttempts} times
 */
public record OrderingSettings(
    KeySpec key,
    OrderingMode mode,
    Duration lockTtl,
    @Nullable String sequence,
    Duration gapTimeout,
    int maxAttempts,
    OrderingFailure onFailure) {

  /** The default lock TTL: 60 seconds. */
  public static final Duration DEFAULT_LOCK_TTL = Duration.ofSeconds(60);

  /** The longest lock TTL: 24 hours. */
  public static final Duration MAX_LOCK_TTL = Duration.ofHours(24);

  /** The default gap timeout: 30 seconds. */
  public static final Duration DEFAULT_GAP_TIMEOUT = Duration.ofSeconds(30);

  /** The longest gap timeout: 1 hour (a sync webhook waits this long at most). */
  public static final Duration MAX_GAP_TIMEOUT = Duration.ofHours(1);

  /** The default number of attempts per event before its key gives it up: 5. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** The most attempts per event: 1000. */
  public static final int MAX_MAX_ATTEMPTS = 1000;

  /**
   * Creates settings without sequence mode and with the default poison-key handling.
   *
   * @param key the ordering key rule
   * @param mode strict or best-effort
   * @param lockTtl the lock TTL
   */
  public OrderingSettings(KeySpec key, OrderingMode mode, Duration lockTtl) {
    this(
        key,
        mode,
        lockTtl,
        null,
        DEFAULT_GAP_TIMEOUT,
        DEFAULT_MAX_ATTEMPTS,
        OrderingFailure.DEAD_LETTER);
  }

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
    Objects.requireNonNull(gapTimeout, "gapTimeout");
    Objects.requireNonNull(onFailure, "onFailure");
    if (sequence != null && sequence.isBlank()) {
      throw new IdemConfigException(
          "sequence is blank; name the field holding the event's version (e.g. body.version)");
    }
    if (gapTimeout.isNegative() || gapTimeout.compareTo(MAX_GAP_TIMEOUT) > 0) {
      throw new IdemConfigException("gap_timeout must be from 0s to 1h, got " + gapTimeout);
    }
    if (maxAttempts < 1 || maxAttempts > MAX_MAX_ATTEMPTS) {
      throw new IdemConfigException("max_attempts must be from 1 to 1000, got " + maxAttempts);
    }
  }
}
