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
 * @param limits how long and how slowly a client may send a request
 * @param managementPort the port of the management listener ({@code /metrics}, {@code /health}), or
 *     null to serve them on {@code port}; 0 picks a free one
 * @param tls TLS on {@code port} ({@code server.tls}), or null for plain HTTP; the management
 *     listener stays plain HTTP
 */
public record ServerSettings(
    String host,
    int port,
    @Nullable String adminToken,
    int maxThreads,
    Duration shutdownTimeout,
    @Nullable String logLevel,
    HttpLimits limits,
    @Nullable Integer managementPort,
    @Nullable TlsSettings tls) {

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
    Objects.requireNonNull(limits, "limits");
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
    if (managementPort != null
        && (managementPort < 0
            || managementPort > 65535
            || (managementPort != 0 && managementPort == port))) {
      throw new IdemConfigException(
          "management_port must be from 0 to 65535 and differ from port, got " + managementPort);
    }
  }

  /**
   * Creates settings without TLS.
   *
   * @param host the address to listen on
   * @param port the TCP port
   * @param adminToken the admin bearer token, or null
   * @param maxThreads the most request threads on Java 17-20
   * @param shutdownTimeout the shutdown timeout
   * @param logLevel the level of Idem's loggers, or null
   * @param limits the HTTP limits
   * @param managementPort the management port, or null
   */
  public ServerSettings(
      String host,
      int port,
      @Nullable String adminToken,
      int maxThreads,
      Duration shutdownTimeout,
      @Nullable String logLevel,
      HttpLimits limits,
      @Nullable Integer managementPort) {
    this(
        host,
        port,
        adminToken,
        maxThreads,
        shutdownTimeout,
        logLevel,
        limits,
        managementPort,
        null);
  }

  /**
   * Creates settings with the default HTTP limits and no management listener.
   *
   * @param host the address to listen on
   * @param port the TCP port
   * @param adminToken the admin bearer token, or null
   * @param maxThreads the most request threads on Java 17-20
   * @param shutdownTimeout the shutdown timeout
   * @param logLevel the level of Idem's loggers, or null
   */
  public ServerSettings(
      String host,
      int port,
      @Nullable String adminToken,
      int maxThreads,
      Duration shutdownTimeout,
      @Nullable String logLevel) {
    this(
        host, port, adminToken, maxThreads, shutdownTimeout, logLevel, HttpLimits.defaults(), null);
  }

  /**
   * Returns these settings listening on another port.
   *
   * @param newPort the TCP port
   * @return a copy with {@code port} replaced
   */
  public ServerSettings withPort(int newPort) {
    return new ServerSettings(
        host,
        newPort,
        adminToken,
        maxThreads,
        shutdownTimeout,
        logLevel,
        limits,
        managementPort,
        tls);
  }

  /**
   * Returns these settings with other HTTP limits.
   *
   * @param newLimits the limits
   * @return a copy with {@code limits} replaced
   */
  public ServerSettings withLimits(HttpLimits newLimits) {
    return new ServerSettings(
        host,
        port,
        adminToken,
        maxThreads,
        shutdownTimeout,
        logLevel,
        newLimits,
        managementPort,
        tls);
  }

  /**
   * Returns these settings with a management listener.
   *
   * @param newManagementPort its port (0 picks a free one), or null for none
   * @return a copy with {@code managementPort} replaced
   */
  public ServerSettings withManagementPort(@Nullable Integer newManagementPort) {
    return new ServerSettings(
        host,
        port,
        adminToken,
        maxThreads,
        shutdownTimeout,
        logLevel,
        limits,
        newManagementPort,
        tls);
  }

  /**
   * Returns these settings with TLS.
   *
   * @param newTls the TLS settings, or null for plain HTTP
   * @return a copy with {@code tls} replaced
   */
  public ServerSettings withTls(@Nullable TlsSettings newTls) {
    return new ServerSettings(
        host,
        port,
        adminToken,
        maxThreads,
        shutdownTimeout,
        logLevel,
        limits,
        managementPort,
        newTls);
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
        + ", limits="
        + limits
        + ", managementPort="
        + managementPort
        + ", tls="
        + tls
        + "]";
  }
}
