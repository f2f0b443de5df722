package dev.idem.server.deliver;

import dev.idem.ManualTimeSource;
import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.tck.ExternalService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Nested;

/**
 * The dispatcher's guarantees over the JDBC store's outbox: on H2 in memory always, and on the
 * local PostgreSQL (skipped when it is not running) with tables of a prefix of their own, dropped
 * afterwards.
 */
class OutboxDispatcherJdbcStoreTest {

  @Nested
  class OnH2 extends OutboxDispatcherContract {
    @Override
    TestOutbox newOutbox(ManualTimeSource clock) {
      String url =
          "jdbc:h2:mem:outbox_"
              + UUID.randomUUID().toString().replace("-", "")
              + ";DB_CLOSE_DELAY=-1";
      JdbcDedupStore store = JdbcDedupStore.builder(url).timeSource(clock).poolSize(4).build();
      return new DedupStoreOutbox<>(store, clock, () -> {});
    }
  }

  @Nested
  class OnPostgreSql extends OutboxDispatcherContract {
    @Override
    TestOutbox newOutbox(ManualTimeSource clock) {
      String url =
          ExternalService.require(
                  "PostgreSQL",
                  "IDEM_PG_URL",
                  "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
                  5432,
                  "pg_ctlcluster 15 main start")
              .url();
      String prefix =
          "sedge_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
      JdbcDedupStore store =
          JdbcDedupStore.builder(url).tablePrefix(prefix).timeSource(clock).poolSize(4).build();
      return new DedupStoreOutbox<>(store, clock, () -> dropTables(url, prefix));
    }

    private void dropTables(String url, String prefix) {
      try (Connection c = DriverManager.getConnection(url);
          Statement st = c.createStatement()) {
        for (String table :
            new String[] {"keys", "outbox", "outbox_keys", "dead_letters", "schema_version"}) {
          st.execute("DROP TABLE IF EXISTS " + prefix + table);
        }
      } catch (Exception e) {
        throw new AssertionError("could not drop the tables of " + prefix, e);
      }
    }
  }
}
