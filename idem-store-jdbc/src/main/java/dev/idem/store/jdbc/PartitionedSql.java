package dev.idem.store.jdbc;

import java.util.List;

/**
 * The key statements of the partitioned layout ({@link JdbcLayout#PARTITIONED}) on PostgreSQL and
 * MariaDB.
 *
 * <p>PostgreSQL tables: {@code <prefix>keys_inflight} holds in-flight keys, primary key {@code
 * (scope, dedup_key)}; {@code <prefix>keys} holds committed keys, {@code PARTITION BY RANGE
 * (deadline_ms)} with one partition per UTC day ({@code <prefix>keys_d<epoch day>}) and one for
 * deadlines from the year 10000 on ({@code <prefix>keys_never}), with a hash index on {@code
 * dedup_key} and no unique constraint (a unique one would have to include the deadline). At most
 * one row of a key is live ({@code deadline_ms > now}) across both tables, because:
 *
 * <ul>
 *   <li>a committed row is only ever written by {@link #commit}, which deletes the key's in-flight
 *       row held by the committing token in the same statement;
 *   <li>a reserve first inserts the in-flight row (the primary key lets one reserver in) and only
 *       then, in a later statement of the same transaction and so on a later snapshot, looks for a
 *       live committed row; if it finds one it rolls back. An insert that waited for a concurrent
 *       commit's delete of the in-flight row therefore always sees that commit's committed row.
 * </ul>
 *
 * Dead committed rows stay until their partition is dropped; reads skip them by their deadline, and
 * {@link #forget} and {@link #clearCommitted} count only rows past the sweeps' mark ({@code
 * <prefix>keys_swept}), so that a key a sweep removed logically answers as removed.
 *
 * <p>MariaDB has no partitioned table without a partitioning column in every unique key and no
 * partition bounded on both sides: its {@code <prefix>keys} has a column {@code expiry_day} (the
 * UTC epoch day of the deadline, {@link Integer#MIN_VALUE} for never), is {@code PARTITION BY RANGE
 * (expiry_day)} with the primary key {@code (scope, dedup_key, expiry_day)}, a first partition
 * {@code pnever} for the never day, and day partitions {@code d<epoch day>} added at the end
 * ({@code ALTER TABLE ... ADD PARTITION}). A day partition holds every day after the one before it
 * up to its own, so days are added without gaps up to {@link #CONTIGUOUS_DAYS} ahead; a deadline
 * further out gets one partition for its day that also holds the days before it. Lookups do not
 * know the day: they probe the primary key of every partition, as on PostgreSQL. The commit is two
 * statements in one transaction ({@code DELETE ... RETURNING} from the in-flight table, then the
 * insert); the insert overwrites a dead row of the key in the same day partition that a sweep had
 * already counted as removed (the primary key allows one row per key and day; any other row of a
 * key being committed is dead).
 *
 * <p>Entry columns are read in the order state, token, since, deadline, fingerprint, result, as in
 * the standard layout.
 */
final class PartitionedSql {
  /** One partition per UTC day. */
  static final long DAY_MILLIS = 86_400_000L;

  /** Deadlines from 10000-01-01T00:00Z on (and "never") go to the {@code never} partition. */
  static final long NEVER_FROM = 253_402_300_800_000L;

  /** MariaDB: the {@code expiry_day} of keys in the never partition. */
  static final int NEVER_DAY = Integer.MIN_VALUE;

  /** MariaDB: how many days ahead day partitions are added one per day, without gaps. */
  static final int CONTIGUOUS_DAYS = 62;

  /** The database these statements are for (PostgreSQL or MariaDB). */
  final JdbcDialect dialect;

  /** Whether {@link #select} takes scope and key twice (MariaDB: no CTE of parameters). */
  final boolean selectTakesKeyTwice;

  /**
   * MariaDB: the commit's first step. Parameters: scope, key, token, now. Returns the fingerprint
   * of the in-flight row it deleted, no row if the commit is stale or repeated.
   */
  final String takeInflight;

  /**
   * MariaDB: the commit's second step. Parameters: scope, key, expiry day, token, since, deadline,
   * fingerprint, result.
   */
  final String insertCommitted;

  /** MariaDB: parameters scope, key; returns the deadline of each deleted in-flight row. */
  final String forgetInflight;

  /** MariaDB: parameters scope, key; returns the deadline of each deleted committed row. */
  final String forgetCommitted;

  /** Returns the sweeps' mark (one row). */
  final String readMark;

  final String insertAbsent;
  final String select;
  final String selectForUpdate;
  final String acquire;
  final String slide;
  final String commit;
  final String committedWith;
  final String release;
  final String extend;
  final String heldWith;

  /** Parameters: scope, key. Returns how many rows were deleted past the sweep mark. */
  final String forget;

  /** Parameters: scope, n, scope. Returns deleted rows, and those past the sweep mark. */
  final String clearBatch;

  /** Parameters: scope, n, scope. Like {@link #clearBatch} for the committed keys. */
  final String clearCommitted;

  final String sweepBatch;
  final String sweepBatchReturning;
  final String probeKeys;

  /**
   * Parameters: scope, key. The key's latest committed row that no sweep has removed logically (its
   * deadline is after the sweep mark), live or dead.
   */
  final String selectLive;

  /**
   * Parameters: scope, key, deadline, now. Deletes a dead committed row that a reserve replaces, so
   * that a key has one row at most.
   */
  final String deleteDead;

  /** Probes the in-flight table's columns. */
  final String probeInflight;

  /** Parameters: now. Moves the sweep mark forward. */
  final String markSwept;

  /** Parameters: the parent's name. Returns name and planner row estimate of each partition. */
  final String listPartitions;

  /** Returns {@code relkind} of the keys table ('p' partitioned, 'r' plain), none if absent. */
  final String keysKind;

  private final String keys;
  private final String inflight;
  private final String swept;

  PartitionedSql(Statements s) {
    keys = s.keys;
    inflight = s.inflight;
    swept = s.swept;
    dialect = s.dialect;
    // The same on both dialects: fenced checks and updates of one key by its token.
    committedWith =
        "SELECT 1 FROM "
            + keys
            + " WHERE scope = ? AND dedup_key = ? AND token = ? AND deadline_ms > ?";
    release =
        "DELETE FROM "
            + s.inflight
            + " WHERE scope = ? AND dedup_key = ? AND token = ? AND deadline_ms > ?";
    extend =
        "UPDATE "
            + s.inflight
            + " SET deadline_ms = GREATEST(deadline_ms, ?)"
            + " WHERE scope = ? AND dedup_key = ? AND token = ? AND deadline_ms > ?";
    heldWith =
        "SELECT 1 FROM "
            + s.inflight
            + " WHERE scope = ? AND dedup_key = ? AND token = ? AND deadline_ms > ?";
    if (dialect == JdbcDialect.MARIADB) {
      String mark =
          "COALESCE((SELECT until_ms FROM "
              + s.swept
              + " WHERE id = 1),"
              + " -9223372036854775808)";
      String committedColumns = "2 AS state, token, since_ms, deadline_ms, fingerprint, result";
      selectTakesKeyTwice = true;
      insertAbsent =
          "INSERT IGNORE INTO "
              + inflight
              + " (scope, dedup_key, token, since_ms, deadline_ms, fingerprint)"
              + " VALUES (?, ?, ?, ?, ?, ?)";
      select =
          "SELECT * FROM (SELECT 1 AS state, token, since_ms, deadline_ms, fingerprint,"
              + " CAST(NULL AS BINARY) AS result FROM "
              + inflight
              + " WHERE scope = ? AND dedup_key = ? UNION ALL SELECT "
              + committedColumns
              + " FROM "
              + keys
              + " WHERE scope = ? AND dedup_key = ?) e ORDER BY deadline_ms DESC LIMIT 1";
      selectForUpdate =
          "SELECT 1 AS state, token, since_ms, deadline_ms, fingerprint, NULL AS result FROM "
              + inflight
              + " WHERE scope = ? AND dedup_key = ? FOR UPDATE";
      selectLive =
          "SELECT "
              + committedColumns
              + " FROM "
              + keys
              + " WHERE scope = ? AND dedup_key = ? AND deadline_ms > "
              + mark
              + " ORDER BY deadline_ms DESC LIMIT 1";
      deleteDead =
          "DELETE FROM "
              + keys
              + " WHERE scope = ? AND dedup_key = ? AND deadline_ms = ? AND deadline_ms <= ?";
      acquire =
          "UPDATE "
              + inflight
              + " SET token = ?, since_ms = ?, deadline_ms = ?, fingerprint = ?"
              + " WHERE scope = ? AND dedup_key = ?";
      // Parameters: new deadline, its day, scope, key, old deadline. A new day moves the row to
      // that day's partition (MariaDB deletes and inserts it).
      slide =
          "UPDATE "
              + keys
              + " SET deadline_ms = ?, expiry_day = ?"
              + " WHERE scope = ? AND dedup_key = ? AND deadline_ms = ?";
      commit = "";
      takeInflight =
          "DELETE FROM "
              + inflight
              + " WHERE scope = ? AND dedup_key = ? AND token = ? AND deadline_ms > ?"
              + " RETURNING fingerprint";
      insertCommitted =
          "INSERT INTO "
              + keys
              + " (scope, dedup_key, expiry_day, token, since_ms, deadline_ms, fingerprint, result)"
              + " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE token = VALUES(token),"
              + " since_ms = VALUES(since_ms), deadline_ms = VALUES(deadline_ms),"
              + " fingerprint = VALUES(fingerprint), result = VALUES(result)";
      forget = "";
      forgetInflight =
          "DELETE FROM " + inflight + " WHERE scope = ? AND dedup_key = ? RETURNING deadline_ms";
      forgetCommitted =
          "DELETE FROM " + keys + " WHERE scope = ? AND dedup_key = ? RETURNING deadline_ms";
      readMark = "SELECT until_ms FROM " + s.swept + " WHERE id = 1";
      // Parameters: scope, n. Returns the deadline of each deleted row.
      clearBatch = "DELETE FROM " + inflight + " WHERE scope = ? LIMIT ? RETURNING deadline_ms";
      clearCommitted = "DELETE FROM " + keys + " WHERE scope = ? LIMIT ? RETURNING deadline_ms";
      sweepBatch =
          "DELETE FROM " + inflight + " WHERE deadline_ms <= ? ORDER BY deadline_ms LIMIT ?";
      sweepBatchReturning = sweepBatch + " RETURNING scope, dedup_key, 1";
      probeKeys =
          "SELECT token, since_ms, deadline_ms, scope, dedup_key, expiry_day, fingerprint, result"
              + " FROM "
              + keys
              + " WHERE 1 = 0";
      probeInflight =
          "SELECT scope, dedup_key, token, since_ms, deadline_ms, fingerprint FROM "
              + inflight
              + " WHERE 1 = 0";
      markSwept = "UPDATE " + s.swept + " SET until_ms = GREATEST(until_ms, ?) WHERE id = 1";
      listPartitions =
          "SELECT partition_name, table_rows FROM information_schema.PARTITIONS"
              + " WHERE table_schema = DATABASE() AND table_name = ?"
              + " AND partition_name IS NOT NULL";
      keysKind = "";
      return;
    }
    selectTakesKeyTwice = false;
    takeInflight = "";
    insertCommitted = "";
    forgetInflight = "";
    forgetCommitted = "";
    readMark = "SELECT until_ms FROM " + s.swept + " WHERE id = 1";
    insertAbsent =
        "INSERT INTO "
            + inflight
            + " (scope, dedup_key, token, since_ms, deadline_ms, fingerprint)"
            + " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, dedup_key) DO NOTHING";
    String inflightColumns =
        "1 AS state, token, since_ms, deadline_ms, fingerprint, CAST(NULL AS bytea) AS result";
    String committedColumns = "2 AS state, token, since_ms, deadline_ms, fingerprint, result";
    // Of all rows of a key the live one, if any, has the latest deadline.
    select =
        "WITH p AS (SELECT CAST(? AS varchar) AS scope, CAST(? AS bytea) AS k)"
            + " SELECT * FROM (SELECT "
            + inflightColumns
            + " FROM "
            + inflight
            + " t, p WHERE t.scope = p.scope AND t.dedup_key = p.k"
            + " UNION ALL SELECT "
            + committedColumns
            + " FROM "
            + keys
            + " t, p WHERE t.scope = p.scope AND t.dedup_key = p.k) e"
            + " ORDER BY deadline_ms DESC LIMIT 1";
    selectForUpdate =
        "SELECT "
            + inflightColumns
            + " FROM "
            + inflight
            + " WHERE scope = ? AND dedup_key = ? FOR UPDATE";
    selectLive =
        "SELECT "
            + committedColumns
            + " FROM "
            + keys
            + " WHERE scope = ? AND dedup_key = ? AND deadline_ms > COALESCE((SELECT until_ms FROM "
            + s.swept
            + " WHERE id = 1), -9223372036854775808) ORDER BY deadline_ms DESC LIMIT 1";
    deleteDead =
        "DELETE FROM "
            + keys
            + " WHERE scope = ? AND dedup_key = ? AND deadline_ms = ? AND deadline_ms <= ?";
    acquire =
        "UPDATE "
            + inflight
            + " SET token = ?, since_ms = ?, deadline_ms = ?, fingerprint = ?"
            + " WHERE scope = ? AND dedup_key = ?";
    // Parameters: new deadline, scope, key, old deadline (exactly the live row read before).
    slide =
        "UPDATE "
            + keys
            + " SET deadline_ms = ? WHERE scope = ? AND dedup_key = ? AND deadline_ms = ?";
    // The same parameters as the standard layout's commit: since, expiry, result, scope, key,
    // token, now. The update count is the number of committed rows written (0 or 1).
    commit =
        "WITH p AS (SELECT CAST(? AS bigint) AS since_ms, CAST(? AS bigint) AS deadline_ms,"
            + " CAST(? AS bytea) AS result, CAST(? AS varchar) AS scope, CAST(? AS bytea) AS k,"
            + " CAST(? AS bigint) AS token, CAST(? AS bigint) AS now_ms),"
            + " d AS (DELETE FROM "
            + inflight
            + " t USING p WHERE t.scope = p.scope AND t.dedup_key = p.k AND t.token = p.token"
            + " AND t.deadline_ms > p.now_ms RETURNING t.scope, t.dedup_key, t.token,"
            + " t.fingerprint)"
            + " INSERT INTO "
            + keys
            + " (token, since_ms, deadline_ms, scope, dedup_key, fingerprint, result)"
            + " SELECT d.token, p.since_ms, p.deadline_ms, d.scope, d.dedup_key, d.fingerprint,"
            + " p.result FROM d, p";
    String mark = "(SELECT until_ms FROM " + s.swept + " WHERE id = 1)";
    forget =
        "WITH p AS (SELECT CAST(? AS varchar) AS scope, CAST(? AS bytea) AS k),"
            + " a AS (DELETE FROM "
            + inflight
            + " t USING p WHERE t.scope = p.scope AND t.dedup_key = p.k RETURNING t.deadline_ms),"
            + " b AS (DELETE FROM "
            + keys
            + " t USING p WHERE t.scope = p.scope AND t.dedup_key = p.k RETURNING t.deadline_ms)"
            + " SELECT count(*) FROM (SELECT deadline_ms FROM a UNION ALL"
            + " SELECT deadline_ms FROM b) d WHERE d.deadline_ms > COALESCE("
            + mark
            + ", -9223372036854775808)";
    clearBatch = clear(inflight, mark);
    clearCommitted = clear(keys, mark);
    sweepBatch =
        "DELETE FROM "
            + inflight
            + " WHERE ctid = ANY (ARRAY(SELECT ctid FROM "
            + inflight
            + " WHERE deadline_ms <= ? LIMIT ? FOR UPDATE SKIP LOCKED))"
            + " AND deadline_ms <= ?";
    sweepBatchReturning = sweepBatch + " RETURNING scope, dedup_key, 1";
    probeKeys =
        "SELECT token, since_ms, deadline_ms, scope, dedup_key, fingerprint, result FROM "
            + keys
            + " WHERE 1 = 0";
    probeInflight =
        "SELECT scope, dedup_key, token, since_ms, deadline_ms, fingerprint FROM "
            + inflight
            + " WHERE 1 = 0";
    markSwept = "UPDATE " + s.swept + " SET until_ms = GREATEST(until_ms, ?) WHERE id = 1";
    listPartitions =
        "SELECT c.relname, c.reltuples FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            + " WHERE i.inhparent = to_regclass(?)";
    keysKind = "SELECT relkind FROM pg_class WHERE oid = to_regclass(?)";
  }

  /**
   * {@link JdbcDedupStore#reserveAll}'s check after its batch insert: which of {@code rows} keys
   * have a committed row that no sweep has removed logically (live or dead, the rows {@link
   * #selectLive} finds). Parameters: scope and key per row; on PostgreSQL one array of the keys
   * (its hash index answers {@code = ANY} in one scan per partition; the rows of other scopes with
   * the same key are for the caller to skip). Returns scope and key of each such row.
   */
  String committedAmong(int rows) {
    if (dialect == JdbcDialect.POSTGRESQL) {
      return "SELECT scope, dedup_key FROM "
          + keys
          + " WHERE dedup_key = ANY (?) AND deadline_ms > COALESCE((SELECT until_ms FROM "
          + swept
          + " WHERE id = 1), -9223372036854775808)";
    }
    StringBuilder sb =
        new StringBuilder(160 + rows * 8)
            .append("SELECT scope, dedup_key FROM ")
            .append(keys)
            .append(" WHERE (scope, dedup_key) IN (");
    for (int i = 0; i < rows; i++) {
      sb.append(i == 0 ? "(?, ?)" : ", (?, ?)");
    }
    return sb.append(") AND deadline_ms > COALESCE((SELECT until_ms FROM ")
        .append(swept)
        .append(" WHERE id = 1), -9223372036854775808)")
        .toString();
  }

  /**
   * MariaDB: {@link JdbcDedupStore#commitAll}'s first step, one statement per chunk: deletes the
   * in-flight rows of {@code rows} keys that the committing tokens hold, with a deadline after the
   * earliest of the commits' clocks, and returns them. Parameters: scope, key and token per row,
   * then that clock. Returns scope, key, token, deadline and fingerprint of each deleted row.
   *
   * <p>One statement, not a locking read followed by a delete: one scan locks the rows it reads in
   * index order, so concurrent commits of sorted chunks take their row locks in one order. With two
   * scans, the second one (the delete) waited on rows of other commits while it held every lock of
   * the first, and under load about one batch in ten of four concurrent loaders deadlocked ({@code
   * MariaDbPartitionedLayoutTest.concurrentBatchCommitsOfDistinctKeysNeedNoRetry}).
   */
  String takeInflightRows(int rows) {
    StringBuilder sb =
        new StringBuilder(160 + rows * 12)
            .append("DELETE FROM ")
            .append(inflight)
            .append(" WHERE (scope, dedup_key, token) IN (");
    for (int i = 0; i < rows; i++) {
      sb.append(i == 0 ? "(?, ?, ?)" : ", (?, ?, ?)");
    }
    return sb.append(
            ") AND deadline_ms > ? RETURNING scope, dedup_key, token, deadline_ms, fingerprint")
        .toString();
  }

  /**
   * MariaDB: {@link #insertCommitted} for {@code rows} keys in one statement. Parameters per row as
   * {@link #insertCommitted}.
   */
  String insertCommittedRows(int rows) {
    StringBuilder sb =
        new StringBuilder(300 + rows * 26)
            .append("INSERT INTO ")
            .append(keys)
            .append(
                " (scope, dedup_key, expiry_day, token, since_ms, deadline_ms, fingerprint, result)"
                    + " VALUES ");
    for (int i = 0; i < rows; i++) {
      sb.append(i == 0 ? "" : ", ").append("(?, ?, ?, ?, ?, ?, ?, ?)");
    }
    return sb.append(
            " ON DUPLICATE KEY UPDATE token = VALUES(token), since_ms = VALUES(since_ms),"
                + " deadline_ms = VALUES(deadline_ms), fingerprint = VALUES(fingerprint),"
                + " result = VALUES(result)")
        .toString();
  }

  /** Deletes up to n rows of one scope; returns how many, and how many were past the mark. */
  private static String clear(String table, String mark) {
    return "WITH d AS (DELETE FROM "
        + table
        + " WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM "
        + table
        + " WHERE scope = ? LIMIT ?) AND scope = ? RETURNING deadline_ms)"
        + " SELECT count(*), count(*) FILTER (WHERE deadline_ms > COALESCE("
        + mark
        + ", -9223372036854775808)) FROM d";
  }

  /**
   * Returns the epoch day whose partition holds a deadline, or {@link Long#MIN_VALUE} for the never
   * partition.
   */
  static long dayOf(long deadlineMillis) {
    return deadlineMillis >= NEVER_FROM
        ? Long.MIN_VALUE
        : Math.floorDiv(deadlineMillis, DAY_MILLIS);
  }

  /**
   * MariaDB: the {@code expiry_day} column of a deadline ({@link #NEVER_DAY} for the never
   * partition).
   */
  static int expiryDay(long deadlineMillis) {
    long day = dayOf(deadlineMillis);
    return day == Long.MIN_VALUE ? NEVER_DAY : Math.toIntExact(day);
  }

  /**
   * Returns the name of a day's partition: a table {@code <prefix>keys_d<day>} on PostgreSQL, a
   * partition {@code d<day>} of {@code <prefix>keys} on MariaDB.
   */
  String partitionName(long day) {
    return partitionHead() + (day < 0 ? "m" + (-day) : Long.toString(day));
  }

  private String partitionHead() {
    return dialect == JdbcDialect.MARIADB ? "d" : keys + "_d";
  }

  /** Returns the day of a partition name made by {@link #partitionName}, or null if not one. */
  Long dayOfPartition(String name) {
    String head = partitionHead();
    if (!name.startsWith(head)) {
      return null;
    }
    String rest = name.substring(head.length());
    boolean negative = rest.startsWith("m");
    String digits = negative ? rest.substring(1) : rest;
    if (digits.isEmpty() || !digits.chars().allMatch(Character::isDigit) || digits.length() > 12) {
      return null;
    }
    long day = Long.parseLong(digits);
    return negative ? -day : day;
  }

  /** MariaDB: adds day partitions after the last one, in increasing order. */
  String addPartitions(List<Long> days) {
    StringBuilder sb =
        new StringBuilder("ALTER TABLE ")
            .append(keys)
            .append(" WAIT ")
            .append(Partitions.DDL_LOCK_TIMEOUT_MS / 1000)
            .append(" ADD PARTITION (");
    for (int i = 0; i < days.size(); i++) {
      long day = days.get(i);
      sb.append(i == 0 ? "" : ", ")
          .append("PARTITION ")
          .append(partitionName(day))
          .append(" VALUES LESS THAN (")
          .append(day + 1)
          .append(')');
    }
    return sb.append(')').toString();
  }

  /** Drops one day partition (PostgreSQL: its table). */
  String dropPartition(String name) {
    return dialect == JdbcDialect.MARIADB
        ? "ALTER TABLE "
            + keys
            + " WAIT "
            + Partitions.DDL_LOCK_TIMEOUT_MS / 1000
            + " DROP PARTITION "
            + name
        : "DROP TABLE IF EXISTS " + name;
  }

  /** Reads the scope and key of every row of one day partition. */
  String selectPartitionKeys(String name) {
    return dialect == JdbcDialect.MARIADB
        ? "SELECT scope, dedup_key FROM " + keys + " PARTITION (" + name + ")"
        : "SELECT scope, dedup_key FROM " + name;
  }

  /** Creates the partition of one day if it is missing (PostgreSQL). */
  String createPartition(long day) {
    return "CREATE TABLE IF NOT EXISTS "
        + partitionName(day)
        + " PARTITION OF "
        + keys
        + " FOR VALUES FROM ("
        + day * DAY_MILLIS
        + ") TO ("
        + (day + 1) * DAY_MILLIS
        + ")";
  }
}
