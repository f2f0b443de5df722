package dev.idem.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/** A stalled PostgreSQL: a table held locked, a proxy that stops forwarding. */
class PostgresStallTest extends AbstractStallTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }

  @Override
  void lockTable(Connection c, String table) throws SQLException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
    }
  }

  @Override
  void unlockTables(Connection c) throws SQLException {
    c.rollback();
    c.setAutoCommit(true);
  }
}
