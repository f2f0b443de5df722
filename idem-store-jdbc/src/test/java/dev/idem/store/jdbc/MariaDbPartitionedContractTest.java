package dev.idem.store.jdbc;

/**
 * The shared store contract, unchanged, on MariaDB with the partitioned layout: committed keys in
 * day partitions of one table, in-flight keys in their own table.
 */
class MariaDbPartitionedContractTest extends AbstractJdbcContractTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }

  @Override
  JdbcLayout layout() {
    return JdbcLayout.PARTITIONED;
  }
}
