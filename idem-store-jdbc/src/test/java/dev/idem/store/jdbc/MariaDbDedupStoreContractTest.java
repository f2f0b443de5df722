package dev.idem.store.jdbc;

/** The shared store contract on MariaDB, durable: restart tests included. */
class MariaDbDedupStoreContractTest extends AbstractJdbcContractTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }
}
