package dev.idem.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/** {@link AbstractPartitionedScaleTest} on PostgreSQL. */
class PostgresPartitionedScaleTest extends AbstractPartitionedScaleTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }

  @Override
  long rowsOfDay(Connection c, long day) throws SQLException {
    return count(c, "SELECT count(*) FROM scale_keys_d" + day);
  }

  @Override
  boolean hasPartition(Connection c, long day) throws SQLException {
    return count(
            c, "SELECT count(*) FROM pg_class WHERE oid = to_regclass('scale_keys_d" + day + "')")
        == 1;
  }
}
