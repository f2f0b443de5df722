package dev.idem.store.jdbc;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;
import dev.idem.tck.DedupStoreContract;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;

/**
 * Runs the shared contract suite on one database. Each store the suite asks for gets tables with a
 * prefix of its own (fresh storage on a shared server), dropped after the test; a reopen opens a
 * new store on the same tables, as a restarted process would.
 */
abstract class AbstractJdbcContractTest extends DedupStoreContract {
  private final Map<DedupStore, String> prefixes = new IdentityHashMap<>();
  private final List<String> created = new ArrayList<>();
  private String url;

  abstract TestDb db();

  /** Durable (except H2, which these tests run in memory) and an outbox. */
  @Override
  protected StoreCapabilities expectedCapabilities() {
    return new StoreCapabilities(false, db() != TestDb.H2, false, true);
  }

  /** The key layout under test; the standard one unless a subclass says otherwise. */
  JdbcLayout layout() {
    return JdbcLayout.STANDARD;
  }

  private String url() {
    if (url == null) {
      url = db().url();
    }
    return url;
  }

  private DedupStore open(String prefix, TimeSource time) {
    JdbcDedupStore store =
        JdbcDedupStore.builder(url())
            .tablePrefix(prefix)
            .layout(layout())
            .timeSource(time)
            .sweepInterval(Duration.ofMinutes(1))
            .poolSize(8)
            .build();
    prefixes.put(store, prefix);
    return store;
  }

  @Override
  protected DedupStore newStore(TimeSource time) {
    String prefix = TestDb.uniquePrefix();
    created.add(prefix);
    return open(prefix, time);
  }

  @Override
  protected DedupStore reopen(DedupStore store, TimeSource time) {
    String prefix = prefixes.get(store);
    store.close();
    return open(prefix, time);
  }

  /** Runs after the suite closed the test's stores: drops the tables this test created. */
  @AfterEach
  void dropTheTestsTables() throws SQLException {
    for (String prefix : created) {
      TestDb.dropTables(url(), prefix);
    }
    created.clear();
    prefixes.clear();
  }
}
