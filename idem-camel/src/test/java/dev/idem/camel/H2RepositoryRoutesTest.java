package dev.idem.camel;

import dev.idem.spi.DedupStore;

/** The Camel route contract on the JDBC store over H2 in memory. */
class H2RepositoryRoutesTest extends RepositoryRoutesContract {
  @Override
  DedupStore openStore() {
    return JdbcStores.open(JdbcStores.h2Url(), JdbcStores.uniquePrefix());
  }

  @Override
  void closeStore(DedupStore store) {
    store.close();
  }
}
