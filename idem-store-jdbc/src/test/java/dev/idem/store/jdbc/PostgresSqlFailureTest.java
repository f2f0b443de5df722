package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.StoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Real PostgreSQL failures: deadlocks, serialization failures, killed connections. */
class PostgresSqlFailureTest extends AbstractSqlFailureTest {
  @Override
  TestDb db() {
    return TestDb.POSTGRESQL;
  }

  @Override
  String backendIdQuery() {
    return "SELECT pg_backend_pid()";
  }

  @Override
  void kill(Connection admin, long backendId) throws SQLException {
    try (PreparedStatement ps = admin.prepareStatement("SELECT pg_terminate_backend(?, 10000)")) {
      ps.setInt(1, (int) backendId);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next() && rs.getBoolean(1)).isTrue();
      }
    }
    awaitGone(admin, "SELECT 1 FROM pg_stat_activity WHERE pid = ?", backendId);
  }

  /**
   * A REPEATABLE READ transaction reads row 1; another transaction changes it and commits before
   * the first one updates it: PostgreSQL refuses with 40001 on the first attempt only.
   */
  private Object serializationConflict(Connection c, AtomicInteger attempts) throws SQLException {
    int attempt = attempts.incrementAndGet();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT v FROM " + table + " WHERE id = 1")) {
      rs.next(); // the transaction's snapshot is taken here
    }
    if (attempt == 1) {
      try (Connection other = TestDb.connect(url)) {
        bump(other, 1);
      }
    }
    bump(c, 1);
    return null;
  }

  @Test
  void aRealSerializationFailureIsRetried() throws SQLException {
    // Given an executor whose connections run REPEATABLE READ
    SqlExecutor exec =
        new SqlExecutor(
            new PlainDataSource(url, Connection.TRANSACTION_REPEATABLE_READ),
            JdbcDialect.POSTGRESQL,
            "test",
            5);
    AtomicInteger attempts = new AtomicInteger();

    // When its transaction's first attempt loses a write conflict
    exec.transaction("serializable", c -> serializationConflict(c, attempts));

    // Then it ran again on a fresh snapshot and took effect once
    assertThat(attempts).hasValue(2);
    assertThat(exec.retries()).isEqualTo(1);
    assertThat(value(1)).isEqualTo(2);
  }

  @Test
  void aSerializationFailureIsClassifiedRetryableBySqlState() {
    // Given no retries, when the conflict happens
    SqlExecutor exec =
        new SqlExecutor(
            new PlainDataSource(url, Connection.TRANSACTION_REPEATABLE_READ),
            JdbcDialect.POSTGRESQL,
            "test",
            0);
    AtomicInteger attempts = new AtomicInteger();
    StoreUnavailableException e =
        catchThrowableOfType(
            StoreUnavailableException.class,
            () -> exec.transaction("serializable", c -> serializationConflict(c, attempts)));

    // Then the server's exception is 40001, which the policy treats as retryable and unapplied
    assertThat(e.outcomeUnknown()).isFalse();
    assertThat(e.getCause()).isInstanceOf(SQLException.class);
    SQLException cause = (SQLException) e.getCause();
    assertThat(cause.getSQLState()).isEqualTo("40001");
    assertThat(SqlErrors.classify(cause, JdbcDialect.POSTGRESQL)).isEqualTo(SqlErrors.Kind.RETRY);
  }
}
