package dev.idem.ordering;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * How one ordering step behaves: its {@link OrderingMode} and how long a holder may keep a key
 * before it is presumed dead. Immutable and validated on construction; build one with {@link
 * #ofDefaults()}, {@link #custom()} or {@link #from(OrderingConfig)}.
 *
 * <p>In the service's YAML these are {@code ordering.mode} and {@code ordering.lock_ttl}, e.g.
 * {@code ordering: { key: source.customer_id, mode: strict, lock_ttl: 60s }}.
 *
 * @param mode strict (one at a time, in arrival order) or best effort (take the lock if free,
 *     otherwise proceed without it)
 * @param lockTtl how long a holder may keep its key's turn; once it has held the turn this long it
 *     is presumed dead and the next event for the key is let through. Set it slightly above the
 *     longest time processing one event takes: too short and a slow (not dead) holder is overtaken,
 *     too long and a crashed holder stalls its key for that long
 */
public record OrderingConfig(OrderingMode mode, Duration lockTtl) {

  /** The default mode: {@link OrderingMode#STRICT}. */
  public static final OrderingMode DEFAULT_MODE = OrderingMode.STRICT;

  /** The default lock TTL: 60 seconds. */
  public static final Duration DEFAULT_LOCK_TTL = Duration.ofSeconds(60);

  private static final Duration MIN_LOCK_TTL = Duration.ofMillis(1);

  private static final OrderingConfig DEFAULTS = new OrderingConfig(DEFAULT_MODE, DEFAULT_LOCK_TTL);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if the lock TTL is shorter than one millisecond
   * @throws NullPointerException if a field is null
   */
  public OrderingConfig {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(lockTtl, "lockTtl");
    if (lockTtl.compareTo(MIN_LOCK_TTL) < 0) {
      throw new IdemConfigException(
          "lockTtl (ordering.lock_ttl) must be at least 1ms, got "
              + lockTtl
              + "; set it slightly above the longest time processing one event takes (default "
              + DEFAULT_LOCK_TTL.toSeconds()
              + "s)");
    }
  }

  /**
   * Returns the defaults: strict, 60s lock TTL.
   *
   * @return the default config
   */
  public static OrderingConfig ofDefaults() {
    return DEFAULTS;
  }

  /**
   * Returns a builder starting from the defaults.
   *
   * @return a new builder
   */
  public static Builder custom() {
    return new Builder(DEFAULTS);
  }

  /**
   * Returns a builder starting from another config.
   *
   * @param prototype the config to copy
   * @return a new builder
   */
  public static Builder from(OrderingConfig prototype) {
    return new Builder(Objects.requireNonNull(prototype, "prototype"));
  }

  /** Builds an {@link OrderingConfig}; not thread-safe, copies its values on {@link #build()}. */
  public static final class Builder {
    private OrderingMode mode;
    private Duration lockTtl;

    private Builder(OrderingConfig from) {
      this.mode = from.mode;
      this.lockTtl = from.lockTtl;
    }

    /**
     * Sets the mode.
     *
     * @param mode strict or best effort
     * @return this builder
     */
    public Builder mode(OrderingMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Sets how long a holder may keep its key's turn before it is presumed dead.
     *
     * @param lockTtl at least 1ms
     * @return this builder
     */
    public Builder lockTtl(Duration lockTtl) {
      this.lockTtl = Objects.requireNonNull(lockTtl, "lockTtl");
      return this;
    }

    /**
     * Validates and returns the config.
     *
     * @return the config
     * @throws IdemConfigException if a value is not allowed
     */
    public OrderingConfig build() {
      return new OrderingConfig(mode, lockTtl);
    }
  }
}
