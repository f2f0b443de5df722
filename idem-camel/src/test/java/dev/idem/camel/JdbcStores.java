package dev.idem.camel;

import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.tck.ExternalService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/** JDBC stores for the tests: H2 in memory, and the shared PostgreSQL under a table prefix. */
final class JdbcStores {
  private JdbcStores() {}

  static String postgresUrl() {
    return ExternalService.require(
            "PostgreSQL",
            "IDEM_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
            5432,
            "pg_ctlcluster 15 main start")
        .url();
  }

  static String h2Url() {
    return "jdbc:h2:mem:camel_"
        + UUID.randomUUID().toString().substring(0, 8)
        + ";DB_CLOSE_DELAY=-1";
  }

  static String uniquePrefix() {
    return "c" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
  }

  static JdbcDedupStore open(String url, String prefix) {
    return JdbcDedupStore.builder(url).tablePrefix(prefix).poolSize(4).build();
  }

  /** Drops the tables whose names start with the prefix, and nothing else. */
  static void dropTables(String url, String prefix) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
        while (rs.next()) {
          String name = rs.getString("TABLE_NAME");
          if (name.toLowerCase(Locale.ROOT).startsWith(prefix)) {
            tables.add(name);
          }
        }
      }
      for (String table : tables) {
        st.execute("DROP TABLE IF EXISTS \"" + table + "\"");
      }
    }
  }
}
