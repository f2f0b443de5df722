package dev.idem.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/** A stalled MariaDB: a table held locked, a proxy that stops forwarding. */
class MariaDbStallTest extends AbstractStallTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }

  @Override
  void lockTable(Connection c, String table) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("LOCK TABLES " + table + " WRITE");
    }
  }

  @Override
  void unlockTables(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("UNLOCK TABLES");
    }
  }
}
