package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.idem.StoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * How the store's executor treats real failures from a real server: a deadlock provoked between two
 * transactions is retried and both complete; with no retries left it is reported as unavailable and
 * not applied; a connection the server kills mid-operation is unavailable, with an unknown outcome
 * only where the statement may have committed. Works on a table of its own.
 */
abstract class AbstractSqlFailureTest {
  String url;
  String table;

  abstract TestDb db();

  /** Returns the SQL that answers this connection's server-side id. */
  abstract String backendIdQuery();

  /** Kills the server session with that id, and waits until it is gone. */
  abstract void kill(Connection admin, long backendId) throws SQLException;

  @BeforeEach
  void createTable() throws SQLException {
    url = db().url();
    table = TestDb.uniquePrefix() + "locks";
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + table + " (id INT PRIMARY KEY, v INT NOT NULL)");
      st.execute("INSERT INTO " + table + " (id, v) VALUES (1, 0), (2, 0)");
    }
  }

  @AfterEach
  void dropTable() throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + table);
    }
  }

  SqlExecutor executor(int retries) {
    return new SqlExecutor(new PlainDataSource(url), db().dialect(), "test " + db(), retries);
  }

  void lockRow(Connection c, int id) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT v FROM " + table + " WHERE id = ? FOR UPDATE")) {
      ps.setInt(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
      }
    }
  }

  void bump(Connection c, int id) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("UPDATE " + table + " SET v = v + 1 WHERE id = ?")) {
      ps.setInt(1, id);
      ps.executeUpdate();
    }
  }

  int value(int id) throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT v FROM " + table + " WHERE id = " + id)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /**
   * Two transactions lock rows 1 and 2 in opposite orders; each waits until both hold their first
   * lock, so the second lock of each closes a cycle the server must break by rolling one back.
   */
  List<Throwable> deadlockPair(SqlExecutor exec) throws Exception {
    CountDownLatch bothHoldFirst = new CountDownLatch(2);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Object>> futures = new ArrayList<>();
      for (int[] order : new int[][] {{1, 2}, {2, 1}}) {
        futures.add(
            pool.submit(
                () ->
                    exec.transaction(
                        "deadlock " + order[0],
                        c -> {
                          lockRow(c, order[0]);
                          bothHoldFirst.countDown();
                          // On the retry the latch is already open: no second cycle.
                          awaitLatch(bothHoldFirst);
                          lockRow(c, order[1]);
                          bump(c, 1);
                          bump(c, 2);
                          return null;
                        })));
      }
      List<Throwable> failures = new ArrayList<>();
      for (Future<Object> f : futures) {
        try {
          f.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          failures.add(e.getCause());
        }
      }
      return failures;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aRealDeadlockIsRetriedAndBothTransactionsComplete() throws Exception {
    // Given an executor that may retry
    SqlExecutor exec = executor(5);

    // When two of its transactions deadlock
    List<Throwable> failures = deadlockPair(exec);

    // Then the server's victim was retried (once, normally; a loaded server may pick a victim
    // twice) and both transactions took effect exactly once
    assertThat(failures).isEmpty();
    assertThat(exec.retries()).isBetween(1L, 5L);
    assertThat(value(1)).isEqualTo(2);
    assertThat(value(2)).isEqualTo(2);
  }

  @Test
  void aDeadlockWithNoRetryLeftIsUnavailableAndNotApplied() throws Exception {
    // Given an executor that may not retry
    SqlExecutor exec = executor(0);

    // When two of its transactions deadlock
    List<Throwable> failures = deadlockPair(exec);

    // Then the victim fails as retryable, saying nothing of it was applied
    assertThat(failures)
        .singleElement()
        .isInstanceOfSatisfying(
            StoreUnavailableException.class,
            e -> {
              assertThat(e.outcomeUnknown()).isFalse();
              assertThat(e.getMessage()).contains("deadlock or serialization failure");
            });
    assertThat(value(1)).isEqualTo(1);
    assertThat(value(2)).isEqualTo(1);
  }

  private static void awaitLatch(CountDownLatch latch) {
    try {
      assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  long backendId(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(backendIdQuery())) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Runs {@code op} on a connection the server kills just before the update. */
  private StoreUnavailableException killedDuring(String mode) {
    SqlExecutor exec = executor(5);
    SqlExecutor.Work<Object> work =
        c -> {
          long id = backendId(c);
          try (Connection admin = TestDb.connect(url)) {
            kill(admin, id);
          }
          bump(c, 1);
          return null;
        };
    Throwable t =
        catchThrowable(
            () -> {
              switch (mode) {
                case "write" -> exec.write("killed write", work);
                case "transaction" -> exec.transaction("killed transaction", work);
                default -> exec.read("killed read", work);
              }
            });
    assertThat(t).isInstanceOf(StoreUnavailableException.class);
    assertThat(exec.retries()).isZero();
    return (StoreUnavailableException) t;
  }

  @Test
  void aConnectionKilledDuringAnAutocommitWriteIsUnavailableWithUnknownOutcome() {
    assertThat(killedDuring("write").outcomeUnknown()).isTrue();
  }

  @Test
  void aConnectionKilledInsideATransactionIsUnavailableAndNotApplied() throws SQLException {
    assertThat(killedDuring("transaction").outcomeUnknown()).isFalse();
    assertThat(value(1)).isZero();
  }

  @Test
  void aConnectionKilledDuringAReadIsUnavailableAndNotApplied() {
    assertThat(killedDuring("read").outcomeUnknown()).isFalse();
  }

  /** Waits until a session id no longer shows in the server's session list. */
  static void awaitGone(Connection admin, String query, long id) {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              try (PreparedStatement ps = admin.prepareStatement(query)) {
                ps.setLong(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                  return !rs.next();
                }
              }
            });
  }
}
