package dev.idem.store.jdbc;

/** The shared store contract on H2 (in memory, so not durable: restart tests skip). */
class H2DedupStoreContractTest extends AbstractJdbcContractTest {
  @Override
  TestDb db() {
    return TestDb.H2;
  }
}
