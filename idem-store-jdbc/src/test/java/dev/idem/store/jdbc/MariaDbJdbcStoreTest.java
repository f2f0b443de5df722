package dev.idem.store.jdbc;

/** The JDBC store's own guarantees on MariaDB. */
class MariaDbJdbcStoreTest extends AbstractJdbcStoreTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }
}
