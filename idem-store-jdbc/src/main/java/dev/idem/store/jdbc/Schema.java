package dev.idem.store.jdbc;

import dev.idem.StoreException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Creates the store's tables on first use ({@code CREATE TABLE IF NOT EXISTS}, safe to run from
 * many instances at once) and checks that the schema is one this code knows. The DDL lives in
 * {@code schema-<dialect>.sql} next to this class, so operators can run it themselves and build the
 * store with {@code createSchema(false)}.
 */
final class Schema {
  private Schema() {}

  /**
   * Returns the DDL script of a dialect with {@code ${prefix}} replaced, split into statements.
   *
   * @param dialect the database
   * @param prefix the validated table prefix
   * @return the statements in order
   */
  static List<String> script(JdbcDialect dialect, String prefix) {
    return split(read(Statements.schemaResource(dialect)), prefix);
  }

  /**
   * Returns the DDL of a dialect and layout: for {@link JdbcLayout#PARTITIONED} the dialect's
   * script with its keys table (and, on PostgreSQL, its deadline index) replaced by the partitioned
   * layout's keys tables.
   */
  static List<String> script(JdbcDialect dialect, String prefix, JdbcLayout layout) {
    List<String> standard = script(dialect, prefix);
    if (layout == JdbcLayout.STANDARD) {
      return standard;
    }
    List<String> keys = split(read(partitionedResource(dialect)), prefix);
    String table = "CREATE TABLE IF NOT EXISTS " + prefix + "keys (";
    String index = "CREATE INDEX IF NOT EXISTS " + prefix + "keys_deadline ";
    List<String> out = new ArrayList<>();
    int replaced = 0;
    for (String ddl : standard) {
      if (ddl.startsWith(table)) {
        out.addAll(keys);
        replaced++;
      } else if (!ddl.startsWith(index)) {
        out.add(ddl);
      }
    }
    if (replaced != 1) {
      throw new IllegalStateException("the keys table of the standard script was not found");
    }
    return out;
  }

  /** The partitioned layout's keys tables (PostgreSQL). */
  static final String PARTITIONED_RESOURCE = "schema-postgresql-partitioned.sql";

  /** Returns the resource of the partitioned layout's keys tables on a database. */
  static String partitionedResource(JdbcDialect dialect) {
    return switch (dialect) {
      case POSTGRESQL -> PARTITIONED_RESOURCE;
      case MARIADB -> "schema-mariadb-partitioned.sql";
      case H2 -> throw new IllegalStateException("H2 has no partitioned layout");
    };
  }

  private static String read(String resource) {
    try (InputStream in = Schema.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("the jar lacks " + resource + " next to " + Schema.class);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<String> split(String text, String prefix) {
    List<String> statements = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String line : text.split("\n", -1)) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("--")) {
        continue;
      }
      current.append(line).append('\n');
      if (trimmed.endsWith(";")) {
        String sql = current.toString().strip();
        statements.add(sql.substring(0, sql.length() - 1).replace("${prefix}", prefix));
        current.setLength(0);
      }
    }
    if (!current.toString().isBlank()) {
      throw new IllegalStateException("unterminated statement in schema script: " + current);
    }
    return statements;
  }

  /** How often the script is run again after a concurrent creator raced it (MariaDB, H2). */
  private static final int RACE_RETRIES = 3;

  /**
   * Creates the tables if they do not exist. On PostgreSQL the script runs in one transaction under
   * an advisory lock, because concurrent {@code CREATE TABLE IF NOT EXISTS} of the same table can
   * fail there. MariaDB and H2 have no such lock; there, two instances creating the same object at
   * once can make one of them fail with "already exists" even with {@code IF NOT EXISTS} (seen with
   * H2's CREATE INDEX), so the script, whose every statement is idempotent, is run again.
   */
  static void create(Connection c, JdbcDialect dialect, Statements sql) throws SQLException {
    List<String> script = script(dialect, sql.prefix, sql.layout);
    if (dialect == JdbcDialect.POSTGRESQL) {
      SqlExecutor.inTransaction(
          c,
          tx -> {
            try (PreparedStatement lock = tx.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
              lock.setLong(1, ("idem-schema:" + sql.keys).hashCode());
              lock.execute();
            }
            runAll(tx, script);
            return null;
          });
    } else {
      for (int attempt = 0; ; attempt++) {
        try {
          runAll(c, script);
          return;
        } catch (SQLException e) {
          if (attempt >= RACE_RETRIES) {
            throw e;
          }
        }
      }
    }
  }

  private static void runAll(Connection c, List<String> script) throws SQLException {
    try (Statement st = c.createStatement()) {
      for (String ddl : script) {
        st.execute(ddl);
      }
    }
  }

  /**
   * Checks that the tables exist with the columns the store uses and that the schema version is not
   * newer than this code.
   *
   * @throws StoreException naming the table and the fix
   */
  static void verify(Connection c, Statements sql, String store) throws SQLException {
    int version;
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql.readSchemaVersion)) {
      if (!rs.next()) {
        throw new StoreException(
            "table "
                + sql.schemaVersion
                + " in "
                + store
                + " has no version row: run the DDL in docs/stores/jdbc.md completely (its last"
                + " statement inserts the row) or build the store with createSchema(true)");
      }
      version = rs.getInt(1);
    } catch (SQLException e) {
      if (SqlErrors.isUndefinedTable(e)) {
        throw new StoreException(
            "table "
                + sql.schemaVersion
                + " does not exist in "
                + store
                + ": build the store with createSchema(true), or create the tables with the DDL in"
                + " docs/stores/jdbc.md (schema-<database>.sql in the jar) with prefix "
                + sql.prefix,
            e);
      }
      throw e;
    }
    if (version > Statements.SCHEMA_VERSION) {
      throw new StoreException(
          "the tables "
              + sql.prefix
              + "* in "
              + store
              + " have schema version "
              + version
              + ", newer than this Idem ("
              + Statements.SCHEMA_VERSION
              + "): upgrade Idem, or use another table prefix");
    }
    checkLayout(c, sql, store);
    List<String[]> probes = new ArrayList<>();
    probes.add(new String[] {sql.keys, sql.probeKeys});
    if (sql.layout == JdbcLayout.PARTITIONED) {
      probes.add(new String[] {sql.inflight, new PartitionedSql(sql).probeInflight});
    }
    probes.add(new String[] {sql.outbox, sql.probeOutbox});
    probes.add(new String[] {sql.deadLetters, sql.probeDeadLetters});
    probes.add(new String[] {sql.outboxKeys, sql.probeOutboxKeys});
    for (String[] probe : probes) {
      try (Statement st = c.createStatement();
          ResultSet rs = st.executeQuery(probe[1])) {
        rs.next();
      } catch (SQLException e) {
        throw new StoreException(
            "table "
                + probe[0]
                + " in "
                + store
                + " is missing or lacks columns the store needs ("
                + SqlErrors.describe(e)
                + "): create it with the DDL in docs/stores/jdbc.md or build with"
                + " createSchema(true)",
            e);
      }
    }
  }

  /**
   * Refuses a keys table of the other layout (a partitioned one for the standard layout and a plain
   * one for the partitioned layout), which would otherwise fail with a missing column. PostgreSQL
   * and MariaDB; H2 has one layout.
   */
  static void checkLayout(Connection c, Statements sql, String store) throws SQLException {
    Boolean partitioned =
        switch (sql.dialect) {
          case POSTGRESQL -> postgresPartitioned(c, sql);
          case MARIADB -> mariadbPartitioned(c, sql);
          case H2 -> null;
        };
    if (partitioned == null) {
      return; // no keys table yet (the probe below says what is missing), or H2
    }
    if (partitioned != (sql.layout == JdbcLayout.PARTITIONED)) {
      throw new StoreException(
          "table "
              + sql.keys
              + " in "
              + store
              + " was made by layout "
              + (partitioned ? "partitioned" : "standard")
              + ", but this store uses layout "
              + sql.layout.name().toLowerCase(java.util.Locale.ROOT)
              + ": use that layout, or another table prefix");
    }
  }

  private static Boolean postgresPartitioned(Connection c, Statements sql) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT relkind FROM pg_class WHERE oid = to_regclass(?)")) {
      ps.setString(1, sql.keys);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1).equals("p") : null;
      }
    }
  }

  private static Boolean mariadbPartitioned(Connection c, Statements sql) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT COUNT(*), COUNT(partition_name) FROM information_schema.PARTITIONS"
                + " WHERE table_schema = DATABASE() AND table_name = ?")) {
      ps.setString(1, sql.keys);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) == 0 ? null : rs.getLong(2) > 0;
      }
    }
  }
}
