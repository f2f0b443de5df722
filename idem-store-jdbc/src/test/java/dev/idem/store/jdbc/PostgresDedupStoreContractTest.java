package dev.idem.store.jdbc;

/** The shared store contract on PostgreSQL, durable: restart tests included. */
class PostgresDedupStoreContractTest extends AbstractJdbcContractTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }
}
