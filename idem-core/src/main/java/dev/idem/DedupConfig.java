package dev.idem;

import dev.idem.spi.Ttl;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How one dedup step behaves: the window committed keys are remembered for, how that window is
 * counted, and how long an in-flight reservation may block its key. Immutable and validated on
 * construction; build one with {@link #ofDefaults()}, {@link #custom()} or {@link
 * #from(DedupConfig)}.
 *
 * <p>In the service's YAML these are {@code dedup.window}, {@code dedup.expiry} and {@code
 * dedup.lease}.
 *
 * @param ttl how long a committed key is remembered; null for no TTL (kept until evicted or
 *     forgotten)
 * @param expiry sliding (a duplicate hit restarts the window) or fixed (from the first commit)
 * @param lease how long an in-flight reservation blocks the key before a crashed holder is presumed
 *     dead; independent of the TTL
 */
public record DedupConfig(@Nullable Duration ttl, Expiry expiry, Duration lease) {

  /** The default window: 24 hours. */
  public static final Duration DEFAULT_TTL = Duration.ofHours(24);

  /** The default lease: 5 minutes. */
  public static final Duration DEFAULT_LEASE = Duration.ofMinutes(5);

  private static final Duration ONE_MILLI = Duration.ofMillis(1);
  private static final Duration MAX_MILLIS = Duration.ofMillis(Long.MAX_VALUE);

  private static final DedupConfig DEFAULTS =
      new DedupConfig(DEFAULT_TTL, Expiry.SLIDING, DEFAULT_LEASE);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if the TTL or lease is not at least one millisecond
   */
  public DedupConfig {
    Objects.requireNonNull(expiry, "expiry");
    Objects.requireNonNull(lease, "lease");
    if (ttl != null && ttl.compareTo(ONE_MILLI) < 0) {
      throw new IdemConfigException(
          "ttl (window) must be at least 1ms, got " + ttl + "; omit it for no TTL");
    }
    if (ttl != null && ttl.compareTo(MAX_MILLIS) > 0) {
      throw new IdemConfigException(
          "ttl (window) must be at most " + MAX_MILLIS + ", got " + ttl + "; omit it for no TTL");
    }
    if (lease.compareTo(ONE_MILLI) < 0) {
      throw new IdemConfigException("lease must be at least 1ms, got " + lease);
    }
    if (lease.compareTo(MAX_MILLIS) > 0) {
      throw new IdemConfigException("lease must be at most " + MAX_MILLIS + ", got " + lease);
    }
  }

  /**
   * Returns the defaults: 24h sliding window, 5m lease.
   *
   * @return the default config
   */
  public static DedupConfig ofDefaults() {
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
  public static Builder from(DedupConfig prototype) {
    return new Builder(prototype);
  }

  /**
   * Returns the TTL, if any.
   *
   * @return the window, or empty for no TTL
   */
  public Optional<Duration> ttlIfAny() {
    return Optional.ofNullable(ttl);
  }

  /**
   * Returns the window as stores see it.
   *
   * @return the store-level TTL
   */
  public Ttl storeTtl() {
    return ttl == null ? Ttl.NONE : new Ttl(ttl.toMillis(), expiry);
  }

  /** Builds a {@link DedupConfig}; not thread-safe, copies its values on {@link #build()}. */
  public static final class Builder {
    private @Nullable Duration ttl;
    private Expiry expiry;
    private Duration lease;

    private Builder(DedupConfig from) {
      this.ttl = from.ttl;
      this.expiry = from.expiry;
      this.lease = from.lease;
    }

    /**
     * Sets the window committed keys are remembered for.
     *
     * @param ttl at least 1ms
     * @return this builder
     */
    public Builder ttl(Duration ttl) {
      this.ttl = Objects.requireNonNull(ttl, "ttl");
      return this;
    }

    /**
     * Keeps committed keys with no TTL (until evicted or forgotten).
     *
     * @return this builder
     */
    public Builder noTtl() {
      this.ttl = null;
      return this;
    }

    /**
     * Sets how the window is counted.
     *
     * @param expiry sliding or fixed
     * @return this builder
     */
    public Builder expiry(Expiry expiry) {
      this.expiry = Objects.requireNonNull(expiry, "expiry");
      return this;
    }

    /**
     * Sets how long an in-flight reservation blocks its key.
     *
     * @param lease at least 1ms
     * @return this builder
     */
    public Builder lease(Duration lease) {
      this.lease = Objects.requireNonNull(lease, "lease");
      return this;
    }

    /**
     * Validates and returns the config.
     *
     * @return the config
     * @throws IdemConfigException if a value is not allowed
     */
    public DedupConfig build() {
      return new DedupConfig(ttl, expiry, lease);
    }
  }
}
