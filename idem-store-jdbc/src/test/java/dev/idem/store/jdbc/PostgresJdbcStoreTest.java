package dev.idem.store.jdbc;

/** The JDBC store's own guarantees on Postgres. */
class PostgresJdbcStoreTest extends AbstractJdbcStoreTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }
}
