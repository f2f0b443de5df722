package dev.idem.server.logging;

import java.util.Locale;
import java.util.function.Function;
import org.eclipse.jetty.server.CustomRequestLog;
import org.eclipse.jetty.server.RequestLog;
import org.eclipse.jetty.server.Slf4jRequestLogWriter;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The optional access log: with {@code IDEM_ACCESS_LOG=true}, one line per HTTP request (webhooks,
 * {@code /health}, {@code /metrics}, {@code /admin}) at INFO on the logger {@value #LOGGER}, in
 * NCSA common format plus the time taken: {@code 127.0.0.1 - - [01/Dec/2026:10:00:00 +0000] "POST
 * /hooks/orders HTTP/1.1" 202 39 3ms}. It goes through logback like every other line, so {@code
 * IDEM_LOG_FORMAT=json} makes it JSON too. Off by default. The request line includes the path, and
 * admin paths carry raw key values: keep that in mind where the log is shipped.
 */
public final class AccessLog {
  /** The logger the access lines are written to. */
  public static final String LOGGER = "dev.idem.access";

  /** The environment variable that turns the access log on. */
  public static final String ENV = "IDEM_ACCESS_LOG";

  /** The line format (Jetty {@link CustomRequestLog} syntax). */
  public static final String FORMAT = CustomRequestLog.NCSA_FORMAT + " %{ms}Tms";

  private static final Logger LOG = LoggerFactory.getLogger(AccessLog.class);

  private AccessLog() {}

  /**
   * Returns the request log if the environment turns it on.
   *
   * @param env reads an environment variable, e.g. {@code System::getenv}
   * @return the request log, or null when the access log is off
   */
  public static @Nullable RequestLog fromEnvironment(Function<String, @Nullable String> env) {
    return enabled(env.apply(ENV)) ? requestLog() : null;
  }

  /**
   * Reads the switch's value.
   *
   * @param value {@code true}, {@code on}, {@code yes}, {@code 1} (on); unset, empty, {@code
   *     false}, {@code off}, {@code no}, {@code 0} (off); anything else is off, with a warning
   *     naming the allowed values
   * @return whether the access log is on
   */
  public static boolean enabled(@Nullable String value) {
    if (value == null) {
      return false;
    }
    switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "true", "on", "yes", "1":
        return true;
      case "", "false", "off", "no", "0":
        return false;
      default:
        LOG.warn(
            "{}='{}' is not a switch; the access log stays off. Use {}=true to turn it on",
            ENV,
            value,
            ENV);
        return false;
    }
  }

  /**
   * Returns a request log that writes {@link #FORMAT} lines to {@link #LOGGER}.
   *
   * @return a new request log, for {@code Server.setRequestLog}
   */
  public static RequestLog requestLog() {
    Slf4jRequestLogWriter writer = new Slf4jRequestLogWriter();
    writer.setLoggerName(LOGGER);
    return new CustomRequestLog(writer, FORMAT);
  }
}
