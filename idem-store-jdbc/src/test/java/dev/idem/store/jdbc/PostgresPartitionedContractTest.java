package dev.idem.store.jdbc;

/**
 * The shared store contract, unchanged, on PostgreSQL with the partitioned layout: committed keys
 * in day partitions, in-flight keys in their own table.
 */
class PostgresPartitionedContractTest extends AbstractJdbcContractTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }

  @Override
  JdbcLayout layout() {
    return JdbcLayout.PARTITIONED;
  }
}
