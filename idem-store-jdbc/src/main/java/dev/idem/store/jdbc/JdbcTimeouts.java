package dev.idem.store.jdbc;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * How one store timeout becomes the bounds of each database: the server's own statement and lock
 * timeouts (so a statement behind a lock fails cleanly, rolled back, after the timeout), the
 * driver's socket and connect timeouts a little longer (so a server or network that stops answering
 * fails the call instead of hanging it), and a JDBC query timeout as the backstop.
 *
 * <table>
 *   <caption>What {@code timeout} sets</caption>
 *   <tr><th>Database</th><th>Session (each new connection)</th><th>Driver</th></tr>
 *   <tr><td>PostgreSQL</td><td>{@code statement_timeout}, {@code lock_timeout} = timeout</td>
 *       <td>{@code socketTimeout} = timeout + 1 s, {@code connectTimeout}, {@code loginTimeout}
 *       = connection timeout</td></tr>
 *   <tr><td>MariaDB</td><td>{@code max_statement_time} = timeout; {@code lock_wait_timeout},
 *       {@code innodb_lock_wait_timeout} = timeout rounded up to whole seconds</td>
 *       <td>{@code socketTimeout} = timeout + 1 s, {@code connectTimeout} = connection
 *       timeout</td></tr>
 *   <tr><td>H2</td><td>none (embedded: no network)</td><td>none</td></tr>
 * </table>
 *
 * <p>Settings the caller passes as data source properties win over these. A caller's own {@link
 * javax.sql.DataSource} gets only the query timeout backstop: configure its driver's timeouts
 * there.
 */
final class JdbcTimeouts {
  /** The default bound on one statement: 2 seconds. */
  static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

  /** How much longer the socket waits than the server's own timeouts. */
  private static final long SOCKET_MARGIN_MILLIS = 1_000;

  private JdbcTimeouts() {}

  /** How much longer the driver's socket waits than the server's own timeouts. */
  static Duration socketMargin() {
    return Duration.ofMillis(SOCKET_MARGIN_MILLIS);
  }

  /** The JDBC query timeout behind the server's: whole seconds, at least one more than timeout. */
  static int backstopSeconds(Duration timeout) {
    return (int) Math.min(Integer.MAX_VALUE, ceilSeconds(timeout.toMillis()) + 1);
  }

  /** The SQL each new pooled connection runs to bound its statements and lock waits, if any. */
  static @Nullable String sessionSql(JdbcDialect dialect, Duration timeout) {
    long ms = timeout.toMillis();
    return switch (dialect) {
      case POSTGRESQL ->
          "SELECT set_config('statement_timeout', '"
              + ms
              + "ms', false), set_config('lock_timeout', '"
              + ms
              + "ms', false)";
      case MARIADB ->
          "SET SESSION max_statement_time = "
              + String.format(Locale.ROOT, "%.3f", ms / 1000.0)
              + ", lock_wait_timeout = "
              + ceilSeconds(ms)
              + ", innodb_lock_wait_timeout = "
              + ceilSeconds(ms);
      case H2 -> null;
    };
  }

  /** The driver properties that bound network waits. */
  static Map<String, String> driverProperties(
      JdbcDialect dialect, Duration timeout, Duration connectionTimeout) {
    long socketMs = timeout.toMillis() + SOCKET_MARGIN_MILLIS;
    return switch (dialect) {
      case POSTGRESQL ->
          Map.of(
              // pgjdbc counts these in whole seconds.
              "socketTimeout", Long.toString(ceilSeconds(socketMs)),
              "connectTimeout", Long.toString(ceilSeconds(connectionTimeout.toMillis())),
              "loginTimeout", Long.toString(ceilSeconds(connectionTimeout.toMillis())));
      case MARIADB ->
          Map.of(
              "socketTimeout", Long.toString(socketMs),
              "connectTimeout", Long.toString(connectionTimeout.toMillis()));
      case H2 -> Map.of();
    };
  }

  private static long ceilSeconds(long millis) {
    return Math.max(1, (millis + 999) / 1000);
  }
}
