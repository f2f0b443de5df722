package dev.idem.store.jdbc;

import static dev.idem.store.jdbc.TestDb.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Builder validation, connection failures, the caller's DataSource, and the published DDL. */
class JdbcDedupStoreBuilderTest {

  @Test
  void badSettingsAreRefusedWhenSetNamingTheSetting() {
    JdbcDedupStore.Builder b = JdbcDedupStore.builder("jdbc:h2:mem:x");
    assertThatThrownBy(() -> b.tablePrefix("Idem-"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("tablePrefix 'Idem-'");
    assertThatThrownBy(() -> b.tablePrefix("1abc")).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.tablePrefix("x; DROP TABLE users; --"))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.tablePrefix("a".repeat(41))).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.poolSize(0)).hasMessageContaining("poolSize");
    assertThatThrownBy(() -> b.retries(-1)).hasMessageContaining("retries");
    assertThatThrownBy(() -> b.sweepBatchSize(0)).hasMessageContaining("sweepBatchSize");
    assertThatThrownBy(() -> b.sweepInterval(Duration.ofSeconds(-1)))
        .hasMessageContaining("sweepInterval");
    assertThatThrownBy(() -> b.connectionTimeout(Duration.ofMillis(10)))
        .hasMessageContaining("connectionTimeout");
  }

  @Test
  void anUnreachableDatabaseIsUnavailableAndTheMessageHidesThePassword() {
    // Given a URL with a password, pointing at a port where nothing listens
    JdbcDedupStore.Builder b =
        JdbcDedupStore.builder("jdbc:postgresql://127.0.0.1:1/idem?user=u&password=hunter2")
            .connectionTimeout(Duration.ofMillis(250));

    // When the store is built, then it fails as unavailable, applying nothing, without the secret
    assertThatThrownBy(b::build)
        .isInstanceOfSatisfying(
            StoreUnavailableException.class, e -> assertThat(e.outcomeUnknown()).isFalse())
        .hasMessageContaining("127.0.0.1:1")
        .hasMessageNotContaining("hunter2");
  }

  @Test
  void poolSettingsOnACallersDataSourceAreAMistake() {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl("jdbc:h2:mem:builder_ds;DB_CLOSE_DELAY=-1");
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      assertThatThrownBy(() -> JdbcDedupStore.builder(ds).poolSize(4).build())
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("configure them on your DataSource");
    }
  }

  @Test
  void aCallersDataSourceIsUsedAndLeftOpen() throws Exception {
    // Given the application's own pool
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl("jdbc:h2:mem:builder_own;DB_CLOSE_DELAY=-1");
    hc.setAutoCommit(false);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      // When a store is built on it, used and closed
      try (JdbcDedupStore store =
          JdbcDedupStore.builder(ds).tablePrefix("own_").sweepInterval(Duration.ZERO).build()) {
        assertThat(store.dialect()).isEqualTo(JdbcDialect.H2);
        assertThat(store.describe()).contains("jdbc:h2:mem:builder_own").contains("[own_*]");
        ReserveRequest r =
            new ReserveRequest(Scope.of("ds"), key("k"), null, 1, 1_000, 1_000, Ttl.NONE);
        assertThat(store.reserve(r)).isInstanceOf(ReserveResult.Acquired.class);
      }

      // Then the pool still works, and the store's write was committed although the pool hands
      // out connections in manual-commit mode
      try (Connection c = ds.getConnection();
          var st = c.createStatement();
          var rs = st.executeQuery("SELECT COUNT(*) FROM own_keys")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1);
      }
    }
  }

  @Test
  void thePublishedDdlIsTheScriptWithThePrefixFilledIn() {
    for (JdbcDialect d : JdbcDialect.values()) {
      List<String> ddl = JdbcDedupStore.schemaDdl(d, "ops_");
      assertThat(ddl)
          .isNotEmpty()
          .noneMatch(s -> s.contains("${prefix}") || s.strip().endsWith(";"))
          .anyMatch(s -> s.startsWith("CREATE TABLE IF NOT EXISTS ops_keys"))
          .anyMatch(s -> s.contains("ops_keys_deadline"))
          .anyMatch(s -> s.contains("ops_outbox"))
          .anyMatch(s -> s.contains("ops_dead_letters"));
    }
  }
}
