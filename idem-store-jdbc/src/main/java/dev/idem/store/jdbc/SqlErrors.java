package dev.idem.store.jdbc;

import java.sql.BatchUpdateException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;

/**
 * Sorts the SQL errors of the three databases into what the store does with them: retry the
 * statement or transaction (the database rolled it back and says a retry may succeed), report the
 * store unavailable (the connection or server failed), or report an error (anything else: a missing
 * table, a constraint, bad SQL).
 */
final class SqlErrors {

  /** What a failure means for the caller. */
  enum Kind {
    /** Serialization failure, deadlock or lock wait timeout: rolled back, try again. */
    RETRY,
    /** The connection or the server failed: retryable by the caller, maybe applied. */
    UNAVAILABLE,
    /** The database answered with an error that a retry will not fix. */
    ERROR
  }

  /** MariaDB: deadlock found when trying to get lock (SQLState 40001). */
  static final int MARIADB_DEADLOCK = 1213;

  /** MariaDB: lock wait timeout exceeded (only the statement was rolled back). */
  static final int MARIADB_LOCK_WAIT_TIMEOUT = 1205;

  /** MariaDB: the statement ran longer than max_statement_time and was aborted. */
  static final int MARIADB_STATEMENT_TIMEOUT = 1969;

  /** H2: timeout trying to lock a table or row (SQLState HYT00). */
  static final int H2_LOCK_TIMEOUT = 50200;

  /** H2: concurrent update of a row (SQLState HY000). */
  static final int H2_CONCURRENT_UPDATE = 90131;

  private SqlErrors() {}

  /**
   * Classifies a failure, looking through the driver's chain of causes and next exceptions.
   *
   * @param e the failure
   * @param dialect the database that raised it (error codes are vendor-specific)
   * @return what to do about it
   */
  static Kind classify(SQLException e, JdbcDialect dialect) {
    Kind worst = Kind.ERROR;
    int depth = 0;
    for (Throwable t = e; t != null && depth < 16; t = next(t), depth++) {
      if (t instanceof SQLException s) {
        Kind k = classifyOne(s, dialect);
        if (k == Kind.RETRY) {
          return Kind.RETRY;
        }
        if (k == Kind.UNAVAILABLE) {
          worst = Kind.UNAVAILABLE;
        }
      }
    }
    return worst;
  }

  /**
   * Returns whether the failure is a unique-key violation (SQLState 23505, MariaDB 1062).
   *
   * @param e the failure
   * @return true for a duplicate key
   */
  static boolean isDuplicateKey(SQLException e) {
    int depth = 0;
    for (Throwable t = e; t != null && depth < 16; t = next(t), depth++) {
      if (t instanceof SQLException s
          && ("23505".equals(s.getSQLState()) || s.getErrorCode() == 1062)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Returns whether the failure says a table or view does not exist.
   *
   * @param e the failure
   * @return true for an unknown table (PostgreSQL 42P01, MariaDB 42S02 / 1146, H2 42S02 and 42S04)
   */
  static boolean isUndefinedTable(SQLException e) {
    String state = e.getSQLState();
    return "42P01".equals(state)
        || "42S02".equals(state)
        || "42S04".equals(state)
        || e.getErrorCode() == 1146;
  }

  /**
   * Returns whether the failure says the database could not be reached or used right now (a
   * connection or server failure), whatever the database.
   *
   * @param e the failure
   * @return true if a later attempt may succeed without changing anything
   */
  static boolean isUnavailable(SQLException e) {
    int depth = 0;
    for (Throwable t = e; t != null && depth < 16; t = next(t), depth++) {
      if (t instanceof SQLException s && unavailable(s)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Returns whether the server cancelled the statement because it ran longer than the store's
   * statement or lock timeout: the server rolled it back, so nothing of it was applied.
   *
   * @param e the failure
   * @return true for PostgreSQL 57014 (statement timeout) and 55P03 (lock timeout), MariaDB 1969
   *     (max_statement_time)
   */
  static boolean isServerTimeout(SQLException e) {
    int depth = 0;
    for (Throwable t = e; t != null && depth < 16; t = next(t), depth++) {
      if (t instanceof SQLException s
          && ("57014".equals(s.getSQLState())
              || "55P03".equals(s.getSQLState())
              || s.getErrorCode() == MARIADB_STATEMENT_TIMEOUT)) {
        return true;
      }
    }
    return false;
  }

  private static Kind classifyOne(SQLException s, JdbcDialect dialect) {
    String state = s.getSQLState() == null ? "" : s.getSQLState();
    int code = s.getErrorCode();
    boolean retry =
        switch (dialect) {
          case POSTGRESQL -> state.equals("40001") || state.equals("40P01");
          case MARIADB ->
              code == MARIADB_DEADLOCK
                  || code == MARIADB_LOCK_WAIT_TIMEOUT
                  || (code == 0 && state.equals("40001"));
          case H2 ->
              state.equals("40001") || code == H2_LOCK_TIMEOUT || code == H2_CONCURRENT_UPDATE;
        };
    if (retry) {
      return Kind.RETRY;
    }
    return unavailable(s) ? Kind.UNAVAILABLE : Kind.ERROR;
  }

  private static boolean unavailable(SQLException s) {
    String state = s.getSQLState() == null ? "" : s.getSQLState();
    int code = s.getErrorCode();
    if (s instanceof SQLTransientConnectionException
        || s instanceof SQLNonTransientConnectionException
        || s instanceof SQLRecoverableException
        || s instanceof SQLTimeoutException) {
      return true;
    }
    return state.startsWith("08") // connection exception
        || state.startsWith("53") // PostgreSQL: insufficient resources (too many connections)
        || state.startsWith("57") // PostgreSQL: operator intervention (shutdown, cancel)
        || state.startsWith("HYT") // timeouts
        || state.equals("55P03") // PostgreSQL: lock_timeout ran out
        || state.equals("70100") // MariaDB: connection or query was killed
        || code == MARIADB_STATEMENT_TIMEOUT
        || code == 1040 // MariaDB: too many connections
        || code == 1927; // MariaDB: connection killed
  }

  private static Throwable next(Throwable t) {
    if (t instanceof BatchUpdateException b && b.getNextException() != null) {
      return b.getNextException();
    }
    if (t instanceof SQLException s && s.getNextException() != null && s.getNextException() != t) {
      return s.getNextException();
    }
    return t.getCause() == t ? null : t.getCause();
  }

  /**
   * Describes a failure for a message: the driver's text plus SQLState and vendor code.
   *
   * @param e the failure
   * @return e.g. {@code relation "x" does not exist (SQLState 42P01, code 0)}
   */
  static String describe(SQLException e) {
    String msg = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().strip();
    int nl = msg.indexOf('\n');
    if (nl > 0) {
      msg = msg.substring(0, nl);
    }
    return msg + " (SQLState " + e.getSQLState() + ", code " + e.getErrorCode() + ")";
  }
}
