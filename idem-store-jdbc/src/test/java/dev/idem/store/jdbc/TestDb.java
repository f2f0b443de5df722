package dev.idem.store.jdbc;

import dev.idem.DedupKey;
import dev.idem.tck.ExternalService;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The three databases the tests run on. PostgreSQL and MariaDB are the shared local servers (found
 * through {@code IDEM_PG_URL} / {@code IDEM_MARIADB_URL}); every test works on tables with a prefix
 * of its own and drops only those. H2 runs in memory.
 */
enum TestDb {
  POSTGRESQL,
  MARIADB,
  H2;

  /** Returns the JDBC URL, skipping the test (or failing it under CI) if the server is down. */
  String url() {
    return this == H2 ? "jdbc:h2:mem:idem_" + randomHex(6) + ";DB_CLOSE_DELAY=-1" : server().url();
  }

  /** Returns the server's port (not for H2). */
  int port() {
    return server().port();
  }

  private ExternalService server() {
    return switch (this) {
      case POSTGRESQL ->
          ExternalService.require(
              "PostgreSQL",
              "IDEM_PG_URL",
              "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
              5432,
              "pg_ctlcluster 15 main start");
      case MARIADB ->
          ExternalService.require(
              "MariaDB",
              "IDEM_MARIADB_URL",
              "jdbc:mariadb://127.0.0.1:3306/test?user=root",
              3306,
              "service mariadb start");
      case H2 -> throw new IllegalStateException("H2 runs in memory, without a server");
    };
  }

  /** Returns the store's dialect for this database. */
  JdbcDialect dialect() {
    return JdbcDialect.valueOf(name());
  }

  /** Returns a table prefix no other test uses. */
  static String uniquePrefix() {
    return "t" + randomHex(5) + "_";
  }

  /** Opens a plain connection (no pool) for setting up and inspecting a test's tables. */
  static Connection connect(String url) throws SQLException {
    return DriverManager.getConnection(url);
  }

  /**
   * Drops the tables of one prefix (both layouts; a partitioned keys table takes its partitions
   * along), if they exist; nothing else.
   */
  static void dropTables(String url, String prefix) throws SQLException {
    try (Connection c = connect(url);
        Statement st = c.createStatement()) {
      for (String table :
          new String[] {
            "keys",
            "keys_inflight",
            "keys_swept",
            "outbox",
            "outbox_keys",
            "dead_letters",
            "schema_version"
          }) {
        st.execute("DROP TABLE IF EXISTS " + prefix + table);
      }
    }
  }

  /** Returns the key made of SHA-256 of the text. */
  static DedupKey key(String text) {
    try {
      return DedupKey.ofDigest(
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  private static String randomHex(int bytes) {
    byte[] b = new byte[bytes];
    ThreadLocalRandom.current().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }
}
