package dev.idem.camel;

import dev.idem.spi.DedupStore;

/**
 * The Camel route contract on the shared PostgreSQL ({@code IDEM_PG_URL}, default 127.0.0.1:5432),
 * in tables of its own that it drops afterwards.
 */
class PostgresRepositoryRoutesTest extends RepositoryRoutesContract {
  private final String prefix = JdbcStores.uniquePrefix();
  private String url;

  @Override
  DedupStore openStore() {
    url = JdbcStores.postgresUrl();
    return JdbcStores.open(url, prefix);
  }

  @Override
  void closeStore(DedupStore store) throws Exception {
    store.close();
    JdbcStores.dropTables(url, prefix);
  }
}
