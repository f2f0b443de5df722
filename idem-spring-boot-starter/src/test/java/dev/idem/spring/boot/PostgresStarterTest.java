package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.tck.ExternalService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter on the shared PostgreSQL ({@code IDEM_PG_URL}, default 127.0.0.1:5432) through the
 * application's own {@code DataSource}, in tables of its own that it drops afterwards.
 */
@SpringBootTest(
    classes = TestApp.class,
    properties = {
      "idem.store.type=jdbc",
      "idem.scopes.orders.ttl=2h",
      "idem.scopes.orders.lease=30s"
    })
class PostgresStarterTest extends StarterContract {
  private static final String PREFIX =
      "b" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
  private static String url;

  @BeforeAll
  static void postgres() {
    url =
        ExternalService.require(
                "PostgreSQL",
                "IDEM_PG_URL",
                "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
                5432,
                "pg_ctlcluster 15 main start")
            .url();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> url);
    registry.add("idem.store.jdbc.table-prefix", () -> PREFIX);
  }

  @AfterAll
  static void dropTables() throws Exception {
    if (url == null) {
      return;
    }
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
        while (rs.next()) {
          String name = rs.getString("TABLE_NAME");
          if (name.toLowerCase(Locale.ROOT).startsWith(PREFIX)) {
            tables.add(name);
          }
        }
      }
      for (String table : tables) {
        st.execute("DROP TABLE IF EXISTS \"" + table + "\"");
      }
    }
  }

  @Test
  void theStoreIsJdbcOnTheApplicationsDataSource() {
    assertThat(store).isInstanceOf(JdbcDedupStore.class);
    assertThat(store.describe()).containsIgnoringCase("postgres");
  }
}
