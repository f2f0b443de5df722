package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * How long and how slowly a client may send a request before the listener gives up on it ({@code
 * server.read_timeout}, {@code server.min_data_rate}, {@code server.idle_timeout}, {@code
 * server.max_header_size}). A request that breaks a bound is answered {@code 408} (time) or {@code
 * 431}/{@code 414} (size) and its connection is closed; no request thread waits for a slow client.
 *
 * @param readTimeout the most time the request line and headers may take, and separately the most
 *     time the body may take once the headers are in
 * @param minDataRate the slowest accepted body upload, in bytes per second once the first second
 *     has passed; 0 turns the rate check off (the read timeout still bounds the body)
 * @param idleTimeout the longest silence on a connection: between bytes of a request, and between
 *     requests on a kept-alive connection
 * @param maxHeaderSize the largest request line plus headers, in bytes
 */
public record HttpLimits(
    Duration readTimeout, long minDataRate, Duration idleTimeout, int maxHeaderSize) {

  /** The default read timeout: 30 seconds. */
  public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);

  /** The default minimum data rate: 1 KiB per second. */
  public static final long DEFAULT_MIN_DATA_RATE = 1024;

  /** The default idle timeout: 30 seconds. */
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);

  /** The default largest request line plus headers: 8 KiB. */
  public static final int DEFAULT_MAX_HEADER_SIZE = 8192;

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public HttpLimits {
    Objects.requireNonNull(readTimeout, "readTimeout");
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    if (readTimeout.compareTo(Duration.ofMillis(100)) < 0
        || readTimeout.compareTo(Duration.ofHours(1)) > 0) {
      throw new IdemConfigException(
          "read_timeout must be from 100ms to 1h, got "
              + Durations.format(readTimeout)
              + "; 30s suits webhook senders");
    }
    if (minDataRate < 0) {
      throw new IdemConfigException(
          "min_data_rate must not be negative; give bytes per second (e.g. 1KiB), or 0 for no"
              + " rate check");
    }
    if (idleTimeout.compareTo(Duration.ofMillis(100)) < 0
        || idleTimeout.compareTo(Duration.ofHours(1)) > 0) {
      throw new IdemConfigException(
          "idle_timeout must be from 100ms to 1h, got " + Durations.format(idleTimeout));
    }
    if (maxHeaderSize < 1024 || maxHeaderSize > 1 << 20) {
      throw new IdemConfigException(
          "max_header_size must be from 1KiB to 1MiB, got " + DataSizes.format(maxHeaderSize));
    }
  }

  /**
   * Returns the defaults: 30 s to read, at least 1 KiB/s, 30 s idle, 8 KiB of headers.
   *
   * @return the default limits
   */
  public static HttpLimits defaults() {
    return new HttpLimits(
        DEFAULT_READ_TIMEOUT, DEFAULT_MIN_DATA_RATE, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_HEADER_SIZE);
  }
}
