package dev.idem.store.redis;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * The Redis store's settings, validated when created.
 *
 * @param prefix put before every Redis key ({@code <prefix><scope>:<key hex>}); 1 to 256 characters
 *     without spaces or control characters. Default {@code idem:}. Avoid braces: a {@code {...}}
 *     hash tag in the prefix would put every key in one cluster slot.
 * @param commandTimeout how long one command (or one batch) may take before it fails with {@link
 *     dev.idem.StoreUnavailableException} whose outcome is unknown; 1 ms to 10 minutes. Default 2
 *     s.
 * @param connectTimeout how long opening a connection may take (store-created clients only); 1 ms
 *     to 10 minutes. Default 5 s.
 * @param reconnectDelay the longest wait between two reconnect attempts after the connection was
 *     lost (store-created clients only): attempts start after 10 ms and back off exponentially up
 *     to this, so the store answers again within about this long of Redis coming back, whatever the
 *     outage's length; 1 ms to 1 minute. Default 250 ms.
 * @param requireDurable whether opening the store fails (with {@link dev.idem.IdemConfigException})
 *     when Redis is set up to forget keys: an eviction policy other than {@code noeviction}, or no
 *     append-only file, or settings it cannot read. Off by default: then those risks are logged and
 *     reported by {@link RedisDedupStore#durabilityRisks()}.
 * @param layout how keys are laid out in Redis: {@link Layout#STANDARD} (one Redis key per dedup
 *     key, the default) or {@link Layout#COMPACT} (many keys per small hash, one hash per shard;
 *     see {@code docs/stores/redis.md}). The two layouts do not see each other's keys.
 * @param compactShards for the compact layout: how many hashes the keys of a scope are split into
 *     (by the key's hash); 1 to 16,777,216, default 4096. Choose about the live keys of a scope
 *     divided by 25 (see {@code docs/scale.md}) so that each hash stays under Redis's {@code
 *     hash-max-listpack-entries} (128 by default) and small. Ignored by the standard layout.
 */
public record RedisDedupStoreConfig(
    String prefix,
    Duration commandTimeout,
    Duration connectTimeout,
    Duration reconnectDelay,
    boolean requireDurable,
    Layout layout,
    int compactShards) {

  /**
   * How a Redis store lays out its keys. Both layouts give the same answers (the contract suite
   * runs on each); they differ in memory per key and in what an operator sees in Redis.
   */
  public enum Layout {
    /** One Redis string per dedup key, {@code <prefix><scope>:<key hex>}, with its own expiry. */
    STANDARD,
    /**
     * Many keys of one scope per small (listpack-encoded) hash, one hash per shard, dead entries
     * swept once per eighth of the window: about a third of the memory of {@link #STANDARD}.
     */
    COMPACT
  }

  /** The default number of shards (hashes) per scope of the compact layout. */
  public static final int DEFAULT_COMPACT_SHARDS = 4096;

  /** The largest number of shards (hashes) per scope of the compact layout. */
  public static final int MAX_COMPACT_SHARDS = 1 << 24;

  /** The default key prefix. */
  public static final String DEFAULT_PREFIX = "idem:";

  /** The default command timeout. */
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

  /** The default connect timeout. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);

  /** The default longest wait between reconnect attempts. */
  public static final Duration DEFAULT_RECONNECT_DELAY = Duration.ofMillis(250);

  private static final Duration MAX_RECONNECT_DELAY = Duration.ofMinutes(1);

  private static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

  /**
   * Validates the settings.
   *
   * @throws IdemConfigException naming the field, if a value is not allowed
   */
  public RedisDedupStoreConfig {
    checkPrefix(prefix);
    Objects.requireNonNull(layout, "layout");
    if (compactShards < 1 || compactShards > MAX_COMPACT_SHARDS) {
      throw new IdemConfigException(
          "redis compactShards "
              + compactShards
              + " is not allowed: use 1 to "
              + MAX_COMPACT_SHARDS
              + ", about the live keys of a scope divided by 25, e.g. 4096");
    }
    checkTimeout("commandTimeout", commandTimeout);
    checkTimeout("connectTimeout", connectTimeout);
    Objects.requireNonNull(reconnectDelay, "reconnectDelay");
    if (reconnectDelay.toMillis() < 1 || reconnectDelay.compareTo(MAX_RECONNECT_DELAY) > 0) {
      throw new IdemConfigException(
          "redis reconnectDelay "
              + reconnectDelay
              + " is not allowed: use 1 ms to 1 minute, e.g. 250ms");
    }
  }

  /**
   * Creates settings in the standard layout.
   *
   * @param prefix the key prefix
   * @param commandTimeout the command timeout
   * @param connectTimeout the connect timeout
   * @param reconnectDelay the longest wait between reconnect attempts
   * @param requireDurable whether to refuse a Redis that can forget keys
   * @throws IdemConfigException naming the field, if a value is not allowed
   */
  public RedisDedupStoreConfig(
      String prefix,
      Duration commandTimeout,
      Duration connectTimeout,
      Duration reconnectDelay,
      boolean requireDurable) {
    this(
        prefix,
        commandTimeout,
        connectTimeout,
        reconnectDelay,
        requireDurable,
        Layout.STANDARD,
        DEFAULT_COMPACT_SHARDS);
  }

  /**
   * Creates settings with the default reconnect delay, not requiring durability.
   *
   * @param prefix the key prefix
   * @param commandTimeout the command timeout
   * @param connectTimeout the connect timeout
   * @throws IdemConfigException naming the field, if a value is not allowed
   */
  public RedisDedupStoreConfig(String prefix, Duration commandTimeout, Duration connectTimeout) {
    this(prefix, commandTimeout, connectTimeout, DEFAULT_RECONNECT_DELAY, false);
  }

  /**
   * Returns the defaults: prefix {@code idem:}, command timeout 2 s, connect timeout 5 s, reconnect
   * delay at most 250 ms, durability not required, the standard layout.
   *
   * @return the default settings
   */
  public static RedisDedupStoreConfig ofDefaults() {
    return new RedisDedupStoreConfig(
        DEFAULT_PREFIX, DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT);
  }

  private static void checkPrefix(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    if (prefix.isEmpty() || prefix.length() > 256) {
      throw new IdemConfigException(
          "redis prefix '"
              + prefix
              + "' is not allowed: use 1 to 256 characters, e.g. idem: or idem:orders:; it"
              + " keeps Idem's keys apart from everything else in the database");
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (Character.isWhitespace(c) || Character.isISOControl(c)) {
        throw new IdemConfigException(
            "redis prefix '"
                + prefix
                + "' contains a space or control character at index "
                + i
                + ": use printable characters only, e.g. idem:orders:");
      }
    }
  }

  private static void checkTimeout(String field, Duration value) {
    Objects.requireNonNull(value, field);
    if (value.isNegative() || value.isZero() || value.compareTo(MAX_TIMEOUT) > 0) {
      throw new IdemConfigException(
          "redis " + field + " " + value + " is not allowed: use 1 ms to 10 minutes, e.g. 2s");
    }
    if (value.toMillis() < 1) {
      throw new IdemConfigException(
          "redis " + field + " " + value + " is below 1 ms: use 1 ms to 10 minutes, e.g. 2s");
    }
  }
}
