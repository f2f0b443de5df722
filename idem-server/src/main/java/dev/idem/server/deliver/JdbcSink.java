package dev.idem.server.deliver;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;

/**
 * Inserts each event as one row (see {@link JdbcSinkDialect} for the table), through a small
 * HikariCP pool.
 *
 * <p>The idempotency key is the primary key, so the table itself is idempotent: inserting an event
 * that is already there (Idem's retry after a lost answer, or a redelivery from the outbox) counts
 * as delivered and changes nothing.
 *
 * <p>Nothing touches the database at construction, so the service starts while the database is
 * down: the table is created by the first delivery ({@code CREATE TABLE IF NOT EXISTS}), and a
 * database that cannot be reached fails deliveries as retryable. Errors in the event's data
 * (SQLSTATE classes 22 and 23) and in the SQL or the schema (class 42, e.g. a table of another
 * shape or a missing privilege) fail for good; every other error (connections, deadlocks, timeouts)
 * is retryable.
 */
final class JdbcSink implements Sink {
  private final JdbcSinkDialect dialect;
  private final String description;
  private final String createTable;
  private final String insert;
  private final TimeSource time;
  private final HikariDataSource pool;
  private volatile boolean tableReady;

  JdbcSink(JdbcSinkSettings settings, TimeSource time) {
    this.dialect = JdbcSinkDialect.of(settings.url());
    this.description = "jdbc:" + settings.table() + "@" + settings.redactedUrl();
    this.createTable = dialect.createTable(settings.table());
    this.insert = dialect.insert(settings.table());
    this.time = time;
    try {
      DriverManager.getDriver(settings.url());
    } catch (SQLException e) {
      throw new IdemConfigException(
          "deliver.jdbc.url: no JDBC driver accepts " + settings.redactedUrl());
    }
    HikariConfig config = new HikariConfig();
    config.setPoolName("idem-jdbc-sink-" + settings.table());
    config.setJdbcUrl(settings.url());
    if (settings.username() != null) {
      config.setUsername(settings.username());
    }
    if (settings.password() != null) {
      config.setPassword(settings.password());
    }
    config.setMaximumPoolSize(settings.maxPoolSize());
    config.setMinimumIdle(0); // a quiet sink holds no connections
    config.setConnectionTimeout(5_000); // a database that is down fails an attempt in 5s
    config.setInitializationFailTimeout(-1); // start even if the database is down
    config.setAutoCommit(true);
    this.pool = new HikariDataSource(config);
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    try (Connection connection = pool.getConnection()) {
      if (!tableReady) {
        try (Statement statement = connection.createStatement()) {
          statement.execute(createTable);
        }
        tableReady = true;
      }
      try (PreparedStatement statement = connection.prepareStatement(insert)) {
        statement.setString(1, delivery.idempotencyKey());
        statement.setString(2, delivery.pipeline());
        if (delivery.orderingKey() == null) {
          statement.setNull(3, Types.VARCHAR);
        } else {
          statement.setString(3, delivery.orderingKey());
        }
        statement.setString(4, new String(delivery.body(), StandardCharsets.UTF_8));
        dialect.setTime(statement, 5, Instant.ofEpochMilli(time.wallMillis()));
        int rows = statement.executeUpdate();
        // rows == 0: PostgreSQL's ON CONFLICT DO NOTHING found the key already there.
        return new DeliveryOutcome.Delivered(0, null, null);
      } catch (SQLException e) {
        if (dialect.isDuplicateKey(e)) {
          return new DeliveryOutcome.Delivered(0, null, null);
        }
        throw e;
      }
    } catch (SQLException e) {
      return failure(e);
    }
  }

  private DeliveryOutcome.Failed failure(SQLException e) {
    String state = e.getSQLState();
    String error =
        "insert into "
            + description
            + " failed: "
            + e.getMessage()
            + (state == null ? "" : " (SQLSTATE " + state + ")");
    boolean permanent =
        state != null
            && (state.startsWith("22") || state.startsWith("23") || state.startsWith("42"));
    if (permanent && state.startsWith("42")) {
      tableReady = false; // the table may have been dropped; create it again next time
    }
    return new DeliveryOutcome.Failed(error, !permanent);
  }

  @Override
  public String describe() {
    return description;
  }

  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return description;
  }
}
