package dev.idem.store.jdbc;

/** The JDBC store's own guarantees on H2. */
class H2JdbcStoreTest extends AbstractJdbcStoreTest {
  @Override
  TestDb db() {
    return TestDb.H2;
  }
}
