package dev.idem.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/** {@link AbstractPartitionedScaleTest} on MariaDB. */
class MariaDbPartitionedScaleTest extends AbstractPartitionedScaleTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }

  @Override
  long rowsOfDay(Connection c, long day) throws SQLException {
    return count(c, "SELECT count(*) FROM scale_keys PARTITION (d" + day + ")");
  }

  @Override
  boolean hasPartition(Connection c, long day) throws SQLException {
    return count(
            c,
            "SELECT count(*) FROM information_schema.PARTITIONS WHERE table_schema = DATABASE()"
                + " AND table_name = 'scale_keys' AND partition_name = 'd"
                + day
                + "'")
        == 1;
  }
}
