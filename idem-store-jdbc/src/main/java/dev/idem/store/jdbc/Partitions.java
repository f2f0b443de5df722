package dev.idem.store.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The day partitions of the partitioned layout's committed keys: creates a day's partition before
 * the first commit into it (remembering which days exist, so a commit costs no catalog read), one
 * ahead of time from the sweeper, and drops the partitions whose day is over.
 *
 * <p>DDL on a partition takes a lock on the parent table that waits for running statements and
 * makes new ones wait behind it, so each DDL sets a short lock wait ({@code lock_timeout} on
 * PostgreSQL, {@code ALTER TABLE ... WAIT 1} on MariaDB): a drop that cannot get its lock gives up
 * and is tried again at the next sweep.
 *
 * <p>On MariaDB a range partition has no lower bound: a new day can only be added after the last
 * one, and a day partition holds every day since the one before it. So {@code known} is not used
 * there; {@code lastDay} is the last day partition's day, and a deadline at or before it already
 * has a partition.
 */
final class Partitions {
  /** How long partition DDL waits for its lock before it gives up. */
  static final int DDL_LOCK_TIMEOUT_MS = 1000;

  /** MariaDB: how long a store waits for another one that is adding partitions. */
  static final int NAMED_LOCK_WAIT_SECONDS = 5;

  private final Statements sql;
  private final PartitionedSql p;
  private final SqlExecutor exec;
  private final Set<Long> known = ConcurrentHashMap.newKeySet();

  /** MariaDB: the day of the last day partition (Long.MIN_VALUE: not read yet or none). */
  private final AtomicLong lastDay = new AtomicLong(Long.MIN_VALUE);

  /** The longest TTL a commit of this store has asked for: how far ahead to create partitions. */
  private final AtomicLong horizon = new AtomicLong(0);

  Partitions(Statements sql, PartitionedSql p, SqlExecutor exec) {
    this.sql = sql;
    this.p = p;
    this.exec = exec;
  }

  /**
   * Makes sure the partition that a deadline falls in exists.
   *
   * @param nowMillis the caller's time (remembered to create later partitions ahead of time)
   * @param deadlineMillis the deadline about to be written
   */
  void ensureFor(long nowMillis, long deadlineMillis) {
    try {
      ensureFor(null, nowMillis, deadlineMillis);
    } catch (SQLException e) {
      throw new IllegalStateException("unreachable: no connection given", e);
    }
  }

  /**
   * Like {@link #ensureFor(long, long)} on a connection the caller holds in autocommit mode (null:
   * borrow one), so that a caller holding a pooled connection never waits for a second one.
   */
  void ensureFor(@Nullable Connection c, long nowMillis, long deadlineMillis) throws SQLException {
    if (PartitionedSql.dayOf(deadlineMillis) == Long.MIN_VALUE) {
      return; // the never partition comes with the schema
    }
    horizon.accumulateAndGet(Math.max(0, deadlineMillis - nowMillis), Math::max);
    ensureDay(c, nowMillis, deadlineMillis);
  }

  private void ensureDay(@Nullable Connection c, long nowMillis, long deadlineMillis)
      throws SQLException {
    long day = PartitionedSql.dayOf(deadlineMillis);
    if (day == Long.MIN_VALUE) {
      return;
    }
    boolean mariadb = p.dialect == JdbcDialect.MARIADB;
    if (mariadb ? day <= lastDay.get() : known.contains(day)) {
      return;
    }
    long today = Math.floorDiv(nowMillis, PartitionedSql.DAY_MILLIS);
    if (c == null) {
      exec.write(
          "createPartition", conn -> mariadb ? addAfterLast(conn, today, day) : create(conn, day));
    } else if (mariadb) {
      addAfterLast(c, today, day);
    } else {
      create(c, day);
    }
  }

  /**
   * MariaDB: under a named lock (so that instances add partitions one at a time), reads the last
   * day partition and adds the days after it up to {@code day}: every day up to {@link
   * PartitionedSql#CONTIGUOUS_DAYS} after today, and beyond that only {@code day} itself.
   */
  private Void addAfterLast(Connection c, long today, long day) throws SQLException {
    String lock = ("idem-partitions:" + sql.keys);
    try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, ?)")) {
      ps.setString(1, lock);
      ps.setInt(2, NAMED_LOCK_WAIT_SECONDS);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next() || rs.getInt(1) != 1) {
          throw new SQLException(
              "another instance holds lock " + lock + " (adding partitions)", "HY000", 1205);
        }
      }
    }
    try {
      List<Partition> parts = list(c);
      long last = parts.isEmpty() ? Long.MIN_VALUE : parts.get(parts.size() - 1).day();
      if (day > last) {
        // Deadlines are after now, so day >= today; days before today need no partition (the
        // first one added holds everything below it).
        List<Long> add = new ArrayList<>();
        for (long d = Math.max(last + 1, Math.min(today, day)); d <= day; d++) {
          if (d - today >= PartitionedSql.CONTIGUOUS_DAYS) {
            add.add(day); // the gap goes into day's partition
            break;
          }
          add.add(d);
        }
        try (Statement st = c.createStatement()) {
          st.execute(p.addPartitions(add));
        }
        last = day;
      }
      long seen = last;
      lastDay.accumulateAndGet(seen, Math::max);
    } finally {
      try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
        ps.setString(1, lock);
        ps.execute();
      }
    }
    return null;
  }

  /**
   * PostgreSQL: creates a day's partition. Its DDL waits at most {@link #DDL_LOCK_TIMEOUT_MS} for
   * the parent table's lock, which running statements hold (a batch of 500 keys on a loaded machine
   * can hold it for longer), and is tried again after a short pause while the store's operation
   * timeout allows another full wait: the commit that needs the partition waits for it instead of
   * failing, and new statements queue behind the DDL for at most one wait at a time.
   */
  private Void create(Connection c, long day) throws SQLException {
    long started = System.nanoTime();
    for (int attempt = 1; ; attempt++) {
      try {
        SqlExecutor.inTransaction(
            c,
            tx -> {
              try (Statement st = tx.createStatement()) {
                st.execute("SET LOCAL lock_timeout = '" + DDL_LOCK_TIMEOUT_MS + "ms'");
              }
              try (PreparedStatement lock =
                  tx.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
                lock.setLong(1, ("idem-schema:" + sql.keys).hashCode());
                lock.execute();
              }
              try (Statement st = tx.createStatement()) {
                st.execute(p.createPartition(day));
              }
              return null;
            });
        break;
      } catch (SQLException e) {
        long spentNanos = System.nanoTime() - started;
        // a backoff and one more lock wait
        long nextNanos = DDL_LOCK_TIMEOUT_MS * 1_000_000L + SqlExecutor.MAX_BACKOFF_US * 1_000L;
        if (!"55P03".equals(e.getSQLState()) || spentNanos + nextNanos > exec.budgetNanos()) {
          throw e;
        }
        SqlExecutor.backoff(attempt);
      }
    }
    known.add(day);
    return null;
  }

  /** A partition of the committed keys. */
  record Partition(String name, long day, double rowEstimate) {}

  /** Lists the day partitions (not the never partition), oldest first. */
  List<Partition> list(Connection c) throws SQLException {
    List<Partition> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(p.listPartitions)) {
      ps.setString(1, sql.keys);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Long day = p.dayOfPartition(rs.getString(1));
          if (day != null) {
            out.add(new Partition(rs.getString(1), day, rs.getDouble(2)));
          }
        }
      }
    }
    out.sort(java.util.Comparator.comparingLong(Partition::day));
    return out;
  }

  /** Creates the partition a commit at this time with the longest TTL seen will need. */
  void createAhead(long nowMillis) {
    long h = horizon.get();
    if (h > 0) {
      try {
        ensureDay(null, nowMillis, saturatedAdd(nowMillis, h + PartitionedSql.DAY_MILLIS));
      } catch (SQLException e) {
        throw new IllegalStateException("unreachable: no connection given", e);
      }
    }
  }

  /**
   * Drops one partition whose day is over (every row in it is dead), after the listener step.
   *
   * @return whether it was dropped (false: its lock was not granted in time)
   */
  boolean drop(Connection c, Partition part) throws SQLException {
    if (p.dialect == JdbcDialect.MARIADB) {
      try (Statement st = c.createStatement()) {
        st.execute(p.dropPartition(part.name()));
      } catch (SQLException e) {
        if (e.getErrorCode() == SqlErrors.MARIADB_LOCK_WAIT_TIMEOUT) {
          return false; // the table's metadata lock was not granted in time: the next sweep
        }
        throw e;
      }
      return true;
    }
    try {
      SqlExecutor.inTransaction(
          c,
          tx -> {
            try (Statement st = tx.createStatement()) {
              st.execute("SET LOCAL lock_timeout = '" + DDL_LOCK_TIMEOUT_MS + "ms'");
              st.execute(p.dropPartition(part.name()));
            }
            return null;
          });
    } catch (SQLException e) {
      if ("55P03".equals(e.getSQLState())) {
        return false; // lock_not_available: try again at the next sweep
      }
      throw e;
    }
    known.remove(part.day());
    return true;
  }

  /** Forgets which partitions exist (after they were dropped behind this store's back). */
  void forgetKnown() {
    known.clear();
    lastDay.set(Long.MIN_VALUE);
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
