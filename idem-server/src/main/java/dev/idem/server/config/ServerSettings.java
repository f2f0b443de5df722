package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The HTTP listener and the admin API ({@code server}).
 *
 * @param host the address to listen on; {@code 0.0.0.0} (all interfaces, the default) so webhook
 *     senders can reach it, or {@code 127.0.0.1} for local only
 * @param port the TCP port; 0 picks a free one
 * @param adminToken the bearer token of {@code /admin}, or null to turn the admin API off
 * @param maxThreads on Java 17-20, the most request threads (on 21+ requests run on virtual
 *     threads)
 * @param shutdownTimeout how long shutdown waits for requests in flight and deliveries in progress
 * @param logLevel the level of Idem's own loggers, or null for the logback default (INFO, or {@code
 *     IDEM_LOG_LEVEL})
 */
public record ServerSettings(
    String host,
    int port,
    @Nullable String adminToken,
    int maxThreads,
    Duration shutdownTimeout,
    @Nullable String logLevel) {

  /** The default host: all interfaces. */
  public static final String DEFAULT_HOST = "0.0.0.0";

  /** The default port: 8080. */
  public static final int DEFAULT_PORT = 8080;

  /** The default thread bound on Java 17-20: 200. */
  public static final int DEFAULT_MAX_THREADS = 200;

  /** The default shutdown timeout: 10 seconds. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(10);

  /** The longest shutdown timeout: 1 hour. */
  public static final Duration MAX_SHUTDOWN_TIMEOUT = Duration.ofHours(1);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public ServerSettings {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
    if (host.isBlank()) {
      throw new IdemConfigException("host is blank; use 0.0.0.0 (all interfaces) or 127.0.0.1");
    }
    if (port < 0 || port > 65535) {
      throw new IdemConfigException("port must be from 0 to 65535, got " + port);
    }
    if (adminToken != null && adminToken.length() < 16) {
      throw new IdemConfigException(
          "admin_token is too short ("
              + adminToken.length()
              + " characters); use at least 16 random characters (e.g. openssl rand -hex 32),"
              + " or omit it to turn the admin API off");
    }
    if (maxThreads < 8 || maxThreads > 10_000) {
      throw new IdemConfigException("max_threads must be from 8 to 10000, got " + maxThreads);
    }
    if (shutdownTimeout.isNegative() || shutdownTimeout.compareTo(MAX_SHUTDOWN_TIMEOUT) > 0) {
      throw new IdemConfigException(
          "shutdown_timeout must be from 0s to 1h, got " + Durations.format(shutdownTimeout));
    }
    if (logLevel != null && !logLevel.matches("(?i)TRACE|DEBUG|INFO|WARN|ERROR|OFF")) {
      throw new IdemConfigException(
          "log_level: '"
              + logLevel
              + "' is not allowed; use trace, debug, info, warn, error or off");
    }
  }

  /**
   * Returns the defaults: {@code 0.0.0.0:8080}, admin off.
   *
   * @return the default settings
   */
  public static ServerSettings defaults() {
    return new ServerSettings(
        DEFAULT_HOST, DEFAULT_PORT, null, DEFAULT_MAX_THREADS, DEFAULT_SHUTDOWN_TIMEOUT, null);
  }

  /** Hides the admin token. */
  @Override
  public String toString() {
    return "ServerSettings[host="
        + host
        + ", port="
        + port
        + ", adminToken="
        + (adminToken == null ? "none" : Masking.MASK)
        + ", maxThreads="
        + maxThreads
        + ", shutdownTimeout="
        + shutdownTimeout
        + ", logLevel="
        + logLevel
        + "]";
  }
}
