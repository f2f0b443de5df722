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
 */
public record RedisDedupStoreConfig(
    String prefix, Duration commandTimeout, Duration connectTimeout) {

  /** The default key prefix. */
  public static final String DEFAULT_PREFIX = "idem:";

  /** The default command timeout. */
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

  /** The default connect timeout. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);

  private static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

  /**
   * Validates the settings.
   *
   * @throws IdemConfigException naming the field, if a value is not allowed
   */
  public RedisDedupStoreConfig {
    checkPrefix(prefix);
    checkTimeout("commandTimeout", commandTimeout);
    checkTimeout("connectTimeout", connectTimeout);
  }

  /**
   * Returns the defaults: prefix {@code idem:}, command timeout 2 s, connect timeout 5 s.
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
