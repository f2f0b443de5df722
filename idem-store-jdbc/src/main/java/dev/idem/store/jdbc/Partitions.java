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
 * makes new ones wait behind it, so each DDL transaction sets a short {@code lock_timeout}: a drop
 * that cannot get its lock gives up and is tried again at the next sweep.
 */
final class Partitions {
  /** How long partition DDL waits for its lock before it gives up. */
  static final int DDL_LOCK_TIMEOUT_MS = 1000;

  private final Statements sql;
  private final PartitionedSql p;
  private final SqlExecutor exec;
  private final Set<Long> known = ConcurrentHashMap.newKeySet();

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
    ensureDay(c, deadlineMillis);
  }

  private void ensureDay(@Nullable Connection c, long deadlineMillis) throws SQLException {
    long day = PartitionedSql.dayOf(deadlineMillis);
    if (day == Long.MIN_VALUE || known.contains(day)) {
      return;
    }
    if (c == null) {
      exec.write("createPartition", conn -> create(conn, day));
    } else {
      create(c, day);
    }
  }

  private Void create(Connection c, long day) throws SQLException {
    SqlExecutor.inTransaction(
        c,
        tx -> {
          try (Statement st = tx.createStatement()) {
            st.execute("SET LOCAL lock_timeout = '" + DDL_LOCK_TIMEOUT_MS + "ms'");
          }
          try (PreparedStatement lock = tx.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
            lock.setLong(1, ("idem-schema:" + sql.keys).hashCode());
            lock.execute();
          }
          try (Statement st = tx.createStatement()) {
            st.execute(p.createPartition(day));
          }
          return null;
        });
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
        ensureDay(null, saturatedAdd(nowMillis, h + PartitionedSql.DAY_MILLIS));
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
    try {
      SqlExecutor.inTransaction(
          c,
          tx -> {
            try (Statement st = tx.createStatement()) {
              st.execute("SET LOCAL lock_timeout = '" + DDL_LOCK_TIMEOUT_MS + "ms'");
              st.execute("DROP TABLE IF EXISTS " + part.name());
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
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
