package dev.idem.store.jdbc;

import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Runs one store operation on a pooled connection: retries serialization failures and deadlocks a
 * bounded number of times with a small jittered backoff, and turns every other failure into Idem's
 * exceptions with the right {@code outcomeUnknown}.
 *
 * <p>Three kinds of work: a {@linkplain #read read} (never changes anything), an autocommit {@link
 * #write} (one statement or batch that may have been applied if the connection dies while it runs),
 * and a {@link #transaction} (committed here; applied only if the commit went through, so the
 * outcome is unknown only when the commit itself failed).
 *
 * <p>Bounded: every statement the work creates gets a query timeout (the backstop behind the
 * database's own statement and lock timeouts and the driver's socket timeout), and a retry is made
 * only while the operation is still within its time budget ({@code timeout}), so a table held
 * locked for a long time is a {@link StoreUnavailableException} after about one timeout, not a hang
 * for as long as the lock.
 */
final class SqlExecutor {

  /** The work to run on a connection. */
  @FunctionalInterface
  interface Work<T> {
    /**
     * Runs the work.
     *
     * @param c the connection (autocommit on for reads and writes, off for transactions)
     * @return the result
     * @throws SQLException as the driver throws it
     */
    T run(Connection c) throws SQLException;
  }

  private enum Mode {
    READ,
    WRITE,
    TRANSACTION
  }

  /** First backoff ceiling in microseconds; doubled per attempt up to {@link #MAX_BACKOFF_US}. */
  private static final long BASE_BACKOFF_US = 500;

  static final long MAX_BACKOFF_US = 50_000;

  private final DataSource dataSource;
  private final JdbcDialect dialect;
  private final String store;
  private final int attempts;
  private final long budgetNanos;
  private final int queryTimeoutSeconds;
  private final LongAdder retries = new LongAdder();

  SqlExecutor(DataSource dataSource, JdbcDialect dialect, String store, int retries) {
    this(dataSource, dialect, store, retries, JdbcTimeouts.DEFAULT_TIMEOUT);
  }

  SqlExecutor(
      DataSource dataSource, JdbcDialect dialect, String store, int retries, Duration timeout) {
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.store = store;
    this.attempts = retries + 1;
    // H2 is embedded: its lock waits come from this process's own contention (bounded by its
    // LOCK_TIMEOUT and the retries), never from a stalled server, so they get no time budget.
    this.budgetNanos = dialect == JdbcDialect.H2 ? Long.MAX_VALUE : timeout.toNanos();
    this.queryTimeoutSeconds = JdbcTimeouts.backstopSeconds(timeout);
  }

  /** Returns how many retries all operations have made so far (for tests and diagnostics). */
  long retries() {
    return retries.sum();
  }

  /** Runs work that only reads. */
  <T> T read(String op, Work<T> work) {
    return run(op, Mode.READ, work);
  }

  /** Runs work in autocommit mode that may write. */
  <T> T write(String op, Work<T> work) {
    return run(op, Mode.WRITE, work);
  }

  /** Runs work in one transaction, committed after the work returns. */
  <T> T transaction(String op, Work<T> work) {
    return run(op, Mode.TRANSACTION, work);
  }

  /** How long an operation may take, retries included ({@code Long.MAX_VALUE}: unbounded). */
  long budgetNanos() {
    return budgetNanos;
  }

  private <T> T run(String op, Mode mode, Work<T> work) {
    long started = System.nanoTime();
    for (int attempt = 1; ; attempt++) {
      Connection c = connect(op);
      boolean committing = false;
      try {
        try {
          if (mode == Mode.TRANSACTION) {
            c.setAutoCommit(false);
          }
          T value = work.run(c);
          if (mode == Mode.TRANSACTION) {
            committing = true;
            c.commit();
          }
          return value;
        } catch (SQLException | RuntimeException e) {
          if (mode == Mode.TRANSACTION) {
            rollbackQuietly(c);
          }
          throw e;
        } finally {
          if (mode == Mode.TRANSACTION) {
            restoreAutoCommit(c);
          }
          closeQuietly(c);
        }
      } catch (SQLException e) {
        SqlErrors.Kind kind = SqlErrors.classify(e, dialect);
        boolean inBudget =
            budgetNanos == Long.MAX_VALUE || System.nanoTime() - started < budgetNanos;
        if (kind == SqlErrors.Kind.RETRY && attempt < attempts && inBudget) {
          retries.increment();
          backoff(attempt);
          continue;
        }
        throw translate(op, mode, committing, kind, e, attempt, inBudget);
      }
    }
  }

  /**
   * Runs {@code work} as one transaction on a connection that is in autocommit mode, for work that
   * mixes an autocommit statement with a transaction. Rolls back on failure and puts autocommit
   * back.
   */
  static <T> T inTransaction(Connection c, Work<T> work) throws SQLException {
    c.setAutoCommit(false);
    try {
      T value = work.run(c);
      c.commit();
      return value;
    } catch (SQLException | RuntimeException e) {
      rollbackQuietly(c);
      throw e;
    } finally {
      restoreAutoCommit(c);
    }
  }

  /**
   * Like {@link #inTransaction}, with the transaction begun and ended by statements ({@code START
   * TRANSACTION}, {@code COMMIT}, {@code ROLLBACK}) on a connection that stays in autocommit mode.
   * On MariaDB that is one round trip fewer per transaction than turning autocommit off and back on
   * around the commit ({@code set autocommit} is a statement of its own each way). Inside, roll
   * back with {@link #restart}, never {@link Connection#rollback()}.
   */
  static <T> T inExplicitTransaction(Connection c, Work<T> work) throws SQLException {
    execute(c, "START TRANSACTION");
    try {
      T value = work.run(c);
      execute(c, "COMMIT");
      return value;
    } catch (SQLException | RuntimeException e) {
      try {
        execute(c, "ROLLBACK");
      } catch (SQLException ignored) {
        // The connection is broken; the server rolls back when it goes, and the pool drops it.
      }
      throw e;
    }
  }

  /**
   * Rolls back what a transaction did so far and goes on in a new one: {@code ROLLBACK AND CHAIN}
   * in an {@linkplain #inExplicitTransaction explicit} transaction, else {@link
   * Connection#rollback()} (in manual-commit mode the next statement begins the next one).
   */
  static void restart(Connection tx, boolean explicit) throws SQLException {
    if (explicit) {
      execute(tx, "ROLLBACK AND CHAIN");
    } else {
      tx.rollback();
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  private Connection connect(String op) {
    try {
      Connection c = dataSource.getConnection();
      if (!c.getAutoCommit()) {
        // A caller's pool may hand out connections in manual-commit mode.
        c.setAutoCommit(true);
      }
      return withQueryTimeout(c, queryTimeoutSeconds);
    } catch (SQLException e) {
      throw new StoreUnavailableException(
          store,
          false,
          op + ": could not get a connection from " + store + ": " + SqlErrors.describe(e),
          e);
    }
  }

  /**
   * Returns the connection with every statement it creates bounded by a query timeout; closing it
   * closes the pooled connection.
   */
  static Connection withQueryTimeout(Connection c, int seconds) {
    InvocationHandler h =
        (proxy, method, args) -> {
          Object value;
          try {
            value = method.invoke(c, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (value instanceof Statement st) {
            st.setQueryTimeout(seconds);
          }
          return value;
        };
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, h);
  }

  private RuntimeException translate(
      String op,
      Mode mode,
      boolean committing,
      SqlErrors.Kind kind,
      SQLException e,
      int tried,
      boolean inBudget) {
    return switch (kind) {
      case RETRY ->
          // The database rolled the last attempt back: nothing was applied.
          new StoreUnavailableException(
              store,
              false,
              op
                  + " on "
                  + store
                  + (inBudget
                      ? " gave up after "
                          + tried
                          + " attempts that each hit a deadlock or serialization failure: "
                          + SqlErrors.describe(e)
                          + "; retry later or raise retries(..)"
                      : " waited on locks longer than the store timeout ("
                          + Duration.ofNanos(budgetNanos).toMillis()
                          + "ms; another session holds them): "
                          + SqlErrors.describe(e)
                          + "; retry later"),
              e);
      case UNAVAILABLE -> {
        // A statement the server cancelled for running past its timeout was rolled back.
        boolean unknown =
            (mode == Mode.WRITE || (mode == Mode.TRANSACTION && committing))
                && !SqlErrors.isServerTimeout(e);
        yield new StoreUnavailableException(
            store,
            unknown,
            op
                + " failed on "
                + store
                + (unknown ? " (it may have been applied)" : "")
                + ": "
                + SqlErrors.describe(e)
                + (SqlErrors.isServerTimeout(e)
                    ? "; the statement ran past the store's timeout (waiting on a lock another"
                        + " session held, or a slow query): retry later, or raise timeout(..)"
                    : "; check that the database is up and reachable"),
            e);
      }
      case ERROR ->
          new StoreException(
              op
                  + " failed on "
                  + store
                  + ": "
                  + SqlErrors.describe(e)
                  + (SqlErrors.isUndefinedTable(e)
                      ? "; the store's tables are missing: build with createSchema(true) or run"
                          + " the DDL in docs/stores/jdbc.md"
                      : ""),
              e);
    };
  }

  /** Waits a jittered, doubling pause before attempt {@code attempt + 1} (at most 50 ms). */
  static void backoff(int attempt) {
    long ceiling = Math.min(MAX_BACKOFF_US, BASE_BACKOFF_US << Math.min(attempt - 1, 16));
    long micros = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
    LockSupport.parkNanos(micros * 1_000);
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; the server rolls back when it goes, and the pool drops it.
    }
  }

  private static void restoreAutoCommit(Connection c) {
    try {
      c.setAutoCommit(true);
    } catch (SQLException ignored) {
      // The connection is broken; the pool evicts it on close.
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException ignored) {
      // Returning a connection to the pool failed: the pool has already dropped it.
    }
  }
}
