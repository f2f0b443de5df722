package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Real MariaDB failures: deadlocks (1213), lock wait timeouts (1205), killed connections. */
class MariaDbSqlFailureTest extends AbstractSqlFailureTest {
  @Override
  TestDb db() {
    return TestDb.MARIADB;
  }

  @Override
  String backendIdQuery() {
    return "SELECT CONNECTION_ID()";
  }

  @Override
  void kill(Connection admin, long backendId) throws SQLException {
    try (Statement st = admin.createStatement()) {
      st.execute("KILL CONNECTION " + backendId);
    }
    awaitGone(admin, "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ?", backendId);
  }

  @Test
  void aRealLockWaitTimeoutIsRetried() throws SQLException {
    // Given row 1 locked by another transaction, and a session that waits at most 1 s for locks
    SqlExecutor exec = executor(5);
    AtomicInteger attempts = new AtomicInteger();
    try (Connection holder = TestDb.connect(url)) {
      holder.setAutoCommit(false);
      lockRow(holder, 1);

      // When the executor's transaction needs that row (the holder lets go on the second try)
      exec.transaction(
          "wait",
          c -> {
            if (attempts.incrementAndGet() == 1) {
              try (Statement st = c.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = 1");
              }
            } else {
              holder.rollback();
            }
            lockRow(c, 1);
            bump(c, 1);
            return null;
          });
    }

    // Then error 1205 was retried and the transaction took effect once
    assertThat(attempts).hasValue(2);
    assertThat(exec.retries()).isEqualTo(1);
    assertThat(value(1)).isEqualTo(1);
  }
}
