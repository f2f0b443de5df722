package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * The SQL of the JDBC sink per database. The table:
 *
 * <pre>
 * idempotency_key  text, primary key      (downstream idempotency: a repeat is a no-op)
 * pipeline         text, not null
 * ordering_key     text, null
 * payload          JSON (PostgreSQL jsonb, MariaDB JSON, H2 JSON), not null
 * delivered_at     timestamp with time zone (MariaDB: DATETIME(3) in UTC), not null
 * </pre>
 */
enum JdbcSinkDialect {
  POSTGRESQL {
    @Override
    String createTable(String table) {
      return "CREATE TABLE IF NOT EXISTS "
          + table
          + " (idempotency_key VARCHAR(512) PRIMARY KEY,"
          + " pipeline VARCHAR(255) NOT NULL,"
          + " ordering_key VARCHAR(512),"
          + " payload JSONB NOT NULL,"
          + " delivered_at TIMESTAMPTZ NOT NULL)";
    }

    @Override
    String insert(String table) {
      // ON CONFLICT DO NOTHING: a repeat inserts 0 rows instead of raising (and logging) an error.
      return "INSERT INTO "
          + table
          + " (idempotency_key, pipeline, ordering_key, payload, delivered_at)"
          + " VALUES (?, ?, ?, CAST(? AS JSONB), ?) ON CONFLICT (idempotency_key) DO NOTHING";
    }

    @Override
    void setTime(PreparedStatement statement, int index, Instant at) throws SQLException {
      statement.setObject(index, OffsetDateTime.ofInstant(at, ZoneOffset.UTC));
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
      return "23505".equals(e.getSQLState());
    }
  },

  MARIADB {
    @Override
    String createTable(String table) {
      // VARCHAR(255) keeps the utf8mb4 primary key under InnoDB's 3072-byte index limit.
      return "CREATE TABLE IF NOT EXISTS "
          + table
          + " (idempotency_key VARCHAR(255) NOT NULL PRIMARY KEY,"
          + " pipeline VARCHAR(255) NOT NULL,"
          + " ordering_key VARCHAR(255) NULL,"
          + " payload JSON NOT NULL,"
          + " delivered_at DATETIME(3) NOT NULL)";
    }

    @Override
    String insert(String table) {
      return "INSERT INTO "
          + table
          + " (idempotency_key, pipeline, ordering_key, payload, delivered_at)"
          + " VALUES (?, ?, ?, ?, ?)";
    }

    @Override
    void setTime(PreparedStatement statement, int index, Instant at) throws SQLException {
      // DATETIME has no zone: always UTC, whatever the session time zone is.
      statement.setObject(index, LocalDateTime.ofInstant(at, ZoneOffset.UTC));
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
      return e.getErrorCode() == 1062; // ER_DUP_ENTRY
    }
  },

  H2 {
    @Override
    String createTable(String table) {
      return "CREATE TABLE IF NOT EXISTS "
          + table
          + " (idempotency_key VARCHAR(512) PRIMARY KEY,"
          + " pipeline VARCHAR(255) NOT NULL,"
          + " ordering_key VARCHAR(512),"
          + " payload JSON NOT NULL,"
          + " delivered_at TIMESTAMP WITH TIME ZONE NOT NULL)";
    }

    @Override
    String insert(String table) {
      // FORMAT JSON: the text is parsed as JSON, not stored as one JSON string.
      return "INSERT INTO "
          + table
          + " (idempotency_key, pipeline, ordering_key, payload, delivered_at)"
          + " VALUES (?, ?, ?, ? FORMAT JSON, ?)";
    }

    @Override
    void setTime(PreparedStatement statement, int index, Instant at) throws SQLException {
      statement.setObject(index, OffsetDateTime.ofInstant(at, ZoneOffset.UTC));
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
      return "23505".equals(e.getSQLState());
    }
  };

  /** Returns the statement that creates the table if it is missing. */
  abstract String createTable(String table);

  /** Returns the insert; its parameters: key, pipeline, ordering key, payload, delivered at. */
  abstract String insert(String table);

  /** Binds a point in time the way the dialect's column type wants it. */
  abstract void setTime(PreparedStatement statement, int index, Instant at) throws SQLException;

  /** Returns whether the exception is a primary-key violation, i.e. the event is already there. */
  abstract boolean isDuplicateKey(SQLException e);

  /**
   * Picks the dialect of a JDBC URL.
   *
   * @throws IdemConfigException for a URL of another database
   */
  static JdbcSinkDialect of(String url) {
    if (url.startsWith("jdbc:postgresql:")) {
      return POSTGRESQL;
    }
    if (url.startsWith("jdbc:mariadb:")) {
      return MARIADB;
    }
    if (url.startsWith("jdbc:h2:")) {
      return H2;
    }
    if (url.startsWith("jdbc:mysql:")) {
      throw new IdemConfigException(
          "deliver.jdbc.url: use jdbc:mariadb:// for MySQL and MariaDB (Idem ships the MariaDB"
              + " driver)");
    }
    throw new IdemConfigException(
        "deliver.jdbc.url must start with jdbc:postgresql:, jdbc:mariadb: or jdbc:h2:");
  }
}
