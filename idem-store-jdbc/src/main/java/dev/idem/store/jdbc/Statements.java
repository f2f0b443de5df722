package dev.idem.store.jdbc;

import dev.idem.IdemConfigException;
import java.util.regex.Pattern;

/**
 * Every SQL statement of one store, for its dialect and table prefix. All statements are fixed text
 * with {@code ?} parameters; the only text spliced in is the table prefix, which is checked against
 * {@link #PREFIX} first (never user input in SQL).
 *
 * <p>Column meaning: {@code state} 1 is in flight and 2 committed; {@code deadline_ms} is when the
 * lease or the TTL runs out ({@link Long#MAX_VALUE}: never); all times are the callers' epoch
 * milliseconds.
 */
final class Statements {
  /** Lower-case letters, digits and '_', starting with a letter: portable unquoted identifiers. */
  static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9_]{0,39}");

  static final int IN_FLIGHT = 1;
  static final int COMMITTED = 2;

  /** The schema version this code reads and writes. */
  static final int SCHEMA_VERSION = 1;

  final String prefix;
  final String keys;
  final String outbox;
  final String deadLetters;
  final String outboxKeys;
  final String schemaVersion;

  /** The key layout these statements are for. */
  final JdbcLayout layout;

  /** The database these statements are for. */
  final JdbcDialect dialect;

  /** Partitioned layout: the in-flight keys ({@code <prefix>keys_inflight}); else unused. */
  final String inflight;

  /** Partitioned layout: the one-row table of how far sweeps have got; else unused. */
  final String swept;

  // ---- keys -------------------------------------------------------------------------------------

  /**
   * PostgreSQL only: the whole reserve in one statement. Parameters: scope, key, token, now, lease
   * until, fingerprint, sliding refresh (null unless the TTL slides). Returns one row: the entry as
   * it was before (all null if absent) and how many rows {@code ins}, {@code acq} and {@code slide}
   * wrote.
   */
  final String reserve;

  /**
   * Inserts an in-flight entry only if the key has no row (one autocommit statement). Parameters:
   * scope, key, token, now (since), lease until, fingerprint. Update count 1 = inserted.
   */
  final String insertAbsent;

  /** Reads an entry and locks its row until the transaction ends. Parameters: scope, key. */
  final String selectForUpdate;

  /** Reads an entry. Parameters: scope, key. */
  final String select;

  /**
   * Takes over a dead entry (already row-locked). Parameters: token, now, lease until, fingerprint,
   * scope, key.
   */
  final String acquire;

  /** Restarts a committed key's sliding window (row-locked). Parameters: deadline, scope, key. */
  final String slide;

  /**
   * Commits: all conditions in the WHERE clause. Parameters: now (since), expiry, result, scope,
   * key, token, now. Update count 1 = applied.
   */
  final String commit;

  /**
   * Whether a key is committed under a token and alive: a repeated commit. Parameters: scope, key,
   * token, now.
   */
  final String committedWith;

  /** Releases: deletes an in-flight entry held by the token. Parameters: scope, key, token, now. */
  final String release;

  /**
   * Extends a lease: moves an in-flight entry held by the token, whose lease runs, to the later of
   * its deadline and the requested one. Parameters: lease until, scope, key, token, now. Update
   * count 1 = applied (0 may also mean "matched but unchanged" where a driver counts changed rows:
   * see {@link #heldWith}).
   */
  final String extend;

  /**
   * Whether a key is in flight under a token with its lease running. Parameters: scope, key, token,
   * now.
   */
  final String heldWith;

  /** Forgets one key. Parameters: scope, key. */
  final String forget;

  /** Deletes up to n entries of one scope. Parameters: scope, n. */
  final String clearBatch;

  /** Deletes up to n dead entries. Parameters: now, n (PostgreSQL: now, n, now). */
  final String sweepBatch;

  /** Like {@link #sweepBatch} but returns scope, dedup_key and state of each deleted row. */
  final String sweepBatchReturning;

  // ---- outbox -----------------------------------------------------------------------------------

  /**
   * Appends to the outbox. Parameters: queue, key, payload, now (enqueued), now (not before),
   * ordering key (or null).
   */
  final String enqueue;

  /**
   * Creates the row of an ordering key if it is missing and row-locks it until the transaction
   * ends, so that enqueues of one ordering key take their ids one after another. Parameters: queue,
   * ordering key.
   */
  final String lockOrderingKey;

  /**
   * PostgreSQL only: claims in one statement. Parameters: queue, now, now, max, now, now, claimed
   * until, claimant (instance id or null), boot id. Returns id, dedup_key, payload, attempts (after
   * the claim), enqueued_ms, last_error.
   */
  final String claim;

  /**
   * MariaDB and H2: the ids of claimable entries, each without an ordering key or the oldest entry
   * of its key, without locking. Parameters: queue, now, now, max.
   */
  final String selectClaimableHeads;

  /** Marks one entry claimed. Parameters: claimed until, claimant (or null), boot id, id. */
  final String markClaimed;

  /**
   * Makes claimable at once the entries of a queue claimed (not rescheduled: {@code
   * claimed_until_ms} is 0 after a reschedule) by this instance id under another boot id.
   * Parameters: queue, claimant, boot id.
   */
  final String releaseEarlierClaims;

  /** Parameters: queue, id. */
  final String acknowledge;

  /** Parameters: queue, id, attempts (the claim's fence). */
  final String acknowledgeFenced;

  /** Parameters: not before, last error, queue, id. */
  final String reschedule;

  /** Parameters: not before, last error, queue, id, attempts. */
  final String rescheduleFenced;

  /**
   * PostgreSQL: moves an entry to the dead letters in one statement. Parameters: queue, id, dead
   * at, reason. MariaDB and H2: see {@link #lockOutboxRow}, {@link #copyToDeadLetters}.
   */
  final String deadLetter;

  /** As {@link #deadLetter} with the fence. Parameters: queue, id, attempts, dead at, reason. */
  final String deadLetterFenced;

  /** Row-locks one outbox entry. Parameters: queue, id. */
  final String lockOutboxRow;

  /** Row-locks one outbox entry still under a claim. Parameters: queue, id, attempts. */
  final String lockOutboxRowFenced;

  /** Copies one outbox entry to the dead letters. Parameters: dead at, reason, queue, id. */
  final String copyToDeadLetters;

  /** Parameters: queue, id. */
  final String deleteOutboxRow;

  /** Parameters: queue, limit. */
  final String deadLettersOf;

  /**
   * Newest first. Parameters: queue, since, until, before dead at, before dead at, before id,
   * limit.
   */
  final String deadLettersPage;

  /** Parameters: queue, id. Returns the columns of {@link #deadLettersOf}. */
  final String deadLetterById;

  /**
   * The same, row-locked, with the ordering key the entry had as an eighth column. Parameters:
   * queue, id.
   */
  final String lockDeadLetter;

  /** Parameters: queue, id. */
  final String deleteDeadLetter;

  /** Parameters: queue. */
  final String deleteDeadLetters;

  /**
   * Parameters: queue, limit. Returns id, dedup_key, payload, attempts, enqueued_ms, not_before_ms,
   * claimed_until_ms, last_error, in id order.
   */
  final String pendingOf;

  /** Parameters: queue. */
  final String depth;

  // ---- schema -----------------------------------------------------------------------------------

  final String readSchemaVersion;
  final String probeKeys;
  final String probeOutbox;
  final String probeDeadLetters;
  final String probeOutboxKeys;

  Statements(JdbcDialect dialect, String prefix) {
    this(dialect, prefix, JdbcLayout.STANDARD);
  }

  Statements(JdbcDialect dialect, String prefix, JdbcLayout layout) {
    if (prefix == null || !PREFIX.matcher(prefix).matches()) {
      throw new IdemConfigException(
          "table prefix '"
              + prefix
              + "' is not allowed: use 1 to 40 characters of lower-case letters, digits and '_',"
              + " starting with a letter (e.g. idem_)");
    }
    this.prefix = prefix;
    keys = prefix + "keys";
    outbox = prefix + "outbox";
    deadLetters = prefix + "dead_letters";
    outboxKeys = prefix + "outbox_keys";
    schemaVersion = prefix + "schema_version";
    this.layout = layout;
    this.dialect = dialect;
    inflight = prefix + "keys_inflight";
    swept = prefix + "keys_swept";
    if (layout == JdbcLayout.PARTITIONED && dialect == JdbcDialect.H2) {
      throw new IdemConfigException(
          "layout partitioned needs PostgreSQL or MariaDB; "
              + dialect.productName()
              + " stores use layout standard");
    }
    PartitionedSql p = layout == JdbcLayout.PARTITIONED ? new PartitionedSql(this) : null;

    String entryColumns = "state, token, since_ms, deadline_ms, fingerprint, result";
    String limit = dialect == JdbcDialect.H2 ? "FETCH FIRST ? ROWS ONLY" : "LIMIT ?";

    reserve = dialect == JdbcDialect.POSTGRESQL ? postgresReserve(keys) : "";
    insertAbsent =
        p != null
            ? p.insertAbsent
            : switch (dialect) {
              case POSTGRESQL ->
                  "INSERT INTO "
                      + keys
                      + " (scope, dedup_key, state, token, since_ms, deadline_ms, fingerprint)"
                      + " VALUES (?, ?, 1, ?, ?, ?, ?) ON CONFLICT (scope, dedup_key) DO NOTHING";
              case MARIADB ->
                  "INSERT IGNORE INTO "
                      + keys
                      + " (scope, dedup_key, state, token, since_ms, deadline_ms, fingerprint)"
                      + " VALUES (?, ?, 1, ?, ?, ?, ?)";
              case H2 ->
                  "MERGE INTO "
                      + keys
                      + " t USING (VALUES (CAST(? AS VARCHAR(129)), CAST(? AS BINARY(32)),"
                      + " CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT),"
                      + " CAST(? AS BINARY(32))))"
                      + " AS s (scope, dedup_key, token, since_ms, deadline_ms, fingerprint)"
                      + " ON t.scope = s.scope AND t.dedup_key = s.dedup_key"
                      + " WHEN NOT MATCHED THEN INSERT"
                      + " (scope, dedup_key, state, token, since_ms, deadline_ms, fingerprint)"
                      + " VALUES (s.scope, s.dedup_key, 1, s.token, s.since_ms, s.deadline_ms,"
                      + " s.fingerprint)";
            };
    select =
        p != null
            ? p.select
            : "SELECT " + entryColumns + " FROM " + keys + " WHERE scope = ? AND dedup_key = ?";
    selectForUpdate = p != null ? p.selectForUpdate : select + " FOR UPDATE";
    acquire =
        p != null
            ? p.acquire
            : "UPDATE "
                + keys
                + " SET state = 1, token = ?, since_ms = ?, deadline_ms = ?, fingerprint = ?,"
                + " result = NULL WHERE scope = ? AND dedup_key = ?";
    slide =
        p != null
            ? p.slide
            : "UPDATE " + keys + " SET deadline_ms = ? WHERE scope = ? AND dedup_key = ?";
    // No SET expression reads a column, so MariaDB's left-to-right assignment order is harmless.
    commit =
        p != null
            ? p.commit
            : "UPDATE "
                + keys
                + " SET state = 2, since_ms = ?, deadline_ms = ?, result = ?"
                + " WHERE scope = ? AND dedup_key = ? AND token = ? AND state = 1 AND deadline_ms > ?";
    committedWith =
        p != null
            ? p.committedWith
            : "SELECT 1 FROM "
                + keys
                + " WHERE scope = ? AND dedup_key = ? AND token = ? AND state = 2 AND deadline_ms > ?";
    release =
        p != null
            ? p.release
            : "DELETE FROM "
                + keys
                + " WHERE scope = ? AND dedup_key = ? AND token = ? AND state = 1 AND deadline_ms > ?";
    // GREATEST is the same in PostgreSQL, MariaDB and H2; the only column the SET reads is the one
    // it writes, so MariaDB's left-to-right assignment order is harmless here too.
    extend =
        p != null
            ? p.extend
            : "UPDATE "
                + keys
                + " SET deadline_ms = GREATEST(deadline_ms, ?)"
                + " WHERE scope = ? AND dedup_key = ? AND token = ? AND state = 1 AND deadline_ms > ?";
    heldWith =
        p != null
            ? p.heldWith
            : "SELECT 1 FROM "
                + keys
                + " WHERE scope = ? AND dedup_key = ? AND token = ? AND state = 1 AND deadline_ms > ?";
    forget = p != null ? p.forget : "DELETE FROM " + keys + " WHERE scope = ? AND dedup_key = ?";
    clearBatch =
        p != null
            ? p.clearBatch
            : switch (dialect) {
              case POSTGRESQL ->
                  "DELETE FROM "
                      + keys
                      + " WHERE scope = ? AND ctid = ANY (ARRAY(SELECT ctid FROM "
                      + keys
                      + " WHERE scope = ? LIMIT ?))";
              case MARIADB -> "DELETE FROM " + keys + " WHERE scope = ? LIMIT ?";
              case H2 -> "DELETE FROM " + keys + " WHERE scope = ? FETCH FIRST ? ROWS ONLY";
            };
    // The WHERE clause of the DELETE itself re-checks the deadline, so a row that a reserve took
    // over between the inner SELECT and the DELETE is never removed. PostgreSQL skips rows that
    // are locked (being reserved or committed right now) instead of waiting for them.
    sweepBatch =
        p != null
            ? p.sweepBatch
            : switch (dialect) {
              case POSTGRESQL ->
                  "DELETE FROM "
                      + keys
                      + " WHERE ctid = ANY (ARRAY(SELECT ctid FROM "
                      + keys
                      + " WHERE deadline_ms <= ? LIMIT ? FOR UPDATE SKIP LOCKED))"
                      + " AND deadline_ms <= ?";
              case MARIADB ->
                  "DELETE FROM " + keys + " WHERE deadline_ms <= ? ORDER BY deadline_ms LIMIT ?";
              case H2 -> "DELETE FROM " + keys + " WHERE deadline_ms <= ? FETCH FIRST ? ROWS ONLY";
            };
    sweepBatchReturning =
        p != null
            ? p.sweepBatchReturning
            : switch (dialect) {
              case POSTGRESQL, MARIADB -> sweepBatch + " RETURNING scope, dedup_key, state";
              case H2 -> "SELECT scope, dedup_key, state FROM OLD TABLE (" + sweepBatch + ")";
            };

    enqueue =
        "INSERT INTO "
            + outbox
            + " (queue, dedup_key, payload, attempts, enqueued_ms, not_before_ms,"
            + " claimed_until_ms, ordering_key) VALUES (?, ?, ?, 0, ?, ?, 0, ?)";
    lockOrderingKey =
        switch (dialect) {
          case POSTGRESQL ->
              "INSERT INTO "
                  + outboxKeys
                  + " (queue, ordering_key) VALUES (?, ?) ON CONFLICT (queue, ordering_key)"
                  + " DO UPDATE SET queue = EXCLUDED.queue";
          case MARIADB ->
              "INSERT INTO "
                  + outboxKeys
                  + " (queue, ordering_key) VALUES (?, ?) ON DUPLICATE KEY UPDATE queue = queue";
          case H2 ->
              "MERGE INTO "
                  + outboxKeys
                  + " (queue, ordering_key) KEY (queue, ordering_key) VALUES (?, ?)";
        };
    // The oldest entry of each ordering key, read without locks: enqueues of one key take their
    // ids in commit order (lockOrderingKey), so what a reader sees of a key is always its oldest
    // entries, and the oldest it sees is the key's head (or was, if it was settled since).
    String heads =
        " WHERE o.queue = ? AND o.not_before_ms <= ? AND o.claimed_until_ms <= ?"
            + " AND (o.ordering_key IS NULL OR o.id = (SELECT MIN(i.id) FROM "
            + outbox
            + " i WHERE i.queue = o.queue AND i.ordering_key = o.ordering_key))"
            + " ORDER BY o.id ";
    // The locking read checks again, on the row's latest version, that it may be claimed.
    String stillClaimable = " AND not_before_ms <= ? AND claimed_until_ms <= ?";
    claim =
        dialect == JdbcDialect.POSTGRESQL
            ? "WITH h AS (SELECT o.id FROM "
                + outbox
                + " o"
                + heads
                + "LIMIT ?), c AS (SELECT id FROM "
                + outbox
                + " WHERE id IN (SELECT id FROM h)"
                + stillClaimable
                + " FOR UPDATE SKIP LOCKED)"
                + " UPDATE "
                + outbox
                + " o SET attempts = o.attempts + 1, claimed_until_ms = ?, claimant = ?, boot_id = ?"
                + " FROM c WHERE o.id = c.id"
                + " RETURNING o.id, o.dedup_key, o.payload, o.attempts, o.enqueued_ms,"
                + " o.last_error"
            : "";
    selectClaimableHeads = "SELECT o.id FROM " + outbox + " o" + heads + limit;
    markClaimed =
        "UPDATE "
            + outbox
            + " SET attempts = attempts + 1, claimed_until_ms = ?, claimant = ?, boot_id = ?"
            + " WHERE id = ?";
    releaseEarlierClaims =
        "UPDATE "
            + outbox
            + " SET claimed_until_ms = 0 WHERE queue = ? AND claimed_until_ms <> 0"
            + " AND claimant = ? AND boot_id <> ?";
    acknowledge = "DELETE FROM " + outbox + " WHERE queue = ? AND id = ?";
    acknowledgeFenced = acknowledge + " AND attempts = ?";
    reschedule =
        "UPDATE "
            + outbox
            + " SET not_before_ms = ?, claimed_until_ms = 0, last_error = ?"
            + " WHERE queue = ? AND id = ?";
    rescheduleFenced = reschedule + " AND attempts = ?";
    deadLetter = dialect == JdbcDialect.POSTGRESQL ? postgresDeadLetter("") : "";
    deadLetterFenced =
        dialect == JdbcDialect.POSTGRESQL ? postgresDeadLetter(" AND attempts = ?") : "";
    lockOutboxRow = "SELECT id FROM " + outbox + " WHERE queue = ? AND id = ? FOR UPDATE";
    lockOutboxRowFenced =
        "SELECT id FROM " + outbox + " WHERE queue = ? AND id = ? AND attempts = ? FOR UPDATE";
    copyToDeadLetters =
        "INSERT INTO "
            + deadLetters
            + " (id, queue, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason,"
            + " ordering_key)"
            + " SELECT id, queue, dedup_key, payload, attempts, enqueued_ms, ?, ?, ordering_key"
            + " FROM "
            + outbox
            + " WHERE queue = ? AND id = ?";
    deleteOutboxRow = acknowledge;
    deadLettersOf =
        "SELECT id, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason FROM "
            + deadLetters
            + " WHERE queue = ? ORDER BY dead_ms, id "
            + limit;
    String deadColumns =
        "SELECT id, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason FROM ";
    deadLettersPage =
        deadColumns
            + deadLetters
            + " WHERE queue = ? AND dead_ms >= ? AND dead_ms < ?"
            + " AND (dead_ms < ? OR (dead_ms = ? AND id < ?))"
            + " ORDER BY dead_ms DESC, id DESC "
            + limit;
    deadLetterById = deadColumns + deadLetters + " WHERE queue = ? AND id = ?";
    lockDeadLetter =
        "SELECT id, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason, ordering_key FROM "
            + deadLetters
            + " WHERE queue = ? AND id = ? FOR UPDATE";
    deleteDeadLetter = "DELETE FROM " + deadLetters + " WHERE queue = ? AND id = ?";
    deleteDeadLetters = "DELETE FROM " + deadLetters + " WHERE queue = ?";
    pendingOf =
        "SELECT id, dedup_key, payload, attempts, enqueued_ms, not_before_ms, claimed_until_ms,"
            + " last_error FROM "
            + outbox
            + " WHERE queue = ? ORDER BY id "
            + limit;
    depth = "SELECT COUNT(*) FROM " + outbox + " WHERE queue = ?";

    readSchemaVersion = "SELECT version FROM " + schemaVersion + " WHERE id = 1";
    probeKeys =
        p != null
            ? p.probeKeys
            : "SELECT scope, dedup_key, " + entryColumns + " FROM " + keys + " WHERE 1 = 0";
    probeOutbox =
        "SELECT id, queue, dedup_key, payload, attempts, enqueued_ms, not_before_ms,"
            + " claimed_until_ms, last_error, claimant, boot_id, ordering_key FROM "
            + outbox
            + " WHERE 1 = 0";
    probeOutboxKeys = "SELECT queue, ordering_key FROM " + outboxKeys + " WHERE 1 = 0";
    probeDeadLetters =
        "SELECT id, queue, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason,"
            + " ordering_key FROM "
            + deadLetters
            + " WHERE 1 = 0";
  }

  /**
   * MariaDB and H2: selects and row-locks the given entries if they may still be claimed, skipping
   * locked ones. Parameters: {@code n} ids, queue, now, now.
   */
  String selectClaimableByIds(int n) {
    StringBuilder sb =
        new StringBuilder("SELECT id, dedup_key, payload, attempts, enqueued_ms, last_error FROM ")
            .append(outbox)
            .append(" WHERE id IN (");
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "?" : ", ?");
    }
    return sb.append(") AND queue = ? AND not_before_ms <= ? AND claimed_until_ms <= ?")
        .append(" ORDER BY id FOR UPDATE SKIP LOCKED")
        .toString();
  }

  private String postgresDeadLetter(String fence) {
    return "WITH d AS (DELETE FROM "
        + outbox
        + " WHERE queue = ? AND id = ?"
        + fence
        + " RETURNING id, queue, dedup_key, payload, attempts, enqueued_ms, ordering_key)"
        + " INSERT INTO "
        + deadLetters
        + " (id, queue, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason,"
        + " ordering_key)"
        + " SELECT id, queue, dedup_key, payload, attempts, enqueued_ms,"
        + " CAST(? AS bigint), CAST(? AS text), ordering_key FROM d";
  }

  /**
   * The PostgreSQL reserve, one statement that cannot race:
   *
   * <ol>
   *   <li>{@code cur} reads the key's row {@code FOR UPDATE}: if it exists, this statement now
   *       holds its lock and sees its latest committed version (READ COMMITTED re-reads a row that
   *       changed after the snapshot), so the decision below is made on exactly that version.
   *   <li>{@code ins} inserts an in-flight row only if {@code cur} found none, with {@code ON
   *       CONFLICT DO NOTHING}: if another transaction inserted the key after this statement's
   *       snapshot, nothing is written and the caller runs the statement again (a new snapshot then
   *       sees that row).
   *   <li>{@code acq} takes over a row whose lease or TTL ran out ({@code deadline_ms <= now}), the
   *       ShedLock condition, under the lock {@code cur} holds.
   *   <li>{@code slide} restarts a live committed key's sliding window unless the fingerprints
   *       conflict or the deadline would not change.
   * </ol>
   *
   * The answer is computed in Java by {@link dev.idem.spi.DedupStateMachine#reserve} from the row
   * {@code cur} returned, and checked against what {@code ins}, {@code acq} and {@code slide}
   * wrote, so the store answers exactly as the reference does.
   */
  private static String postgresReserve(String keys) {
    return """
        WITH p AS (
          SELECT CAST(? AS varchar) AS scope, CAST(? AS bytea) AS k, CAST(? AS bigint) AS token,
                 CAST(? AS bigint) AS now_ms, CAST(? AS bigint) AS lease_until,
                 CAST(? AS bytea) AS fp, CAST(? AS bigint) AS refresh
        ), cur AS (
          SELECT t.state, t.token, t.since_ms, t.deadline_ms, t.fingerprint, t.result
          FROM %1$s t, p WHERE t.scope = p.scope AND t.dedup_key = p.k
          FOR UPDATE OF t
        ), ins AS (
          INSERT INTO %1$s (scope, dedup_key, state, token, since_ms, deadline_ms, fingerprint)
          SELECT p.scope, p.k, 1, p.token, p.now_ms, p.lease_until, p.fp FROM p
          WHERE NOT EXISTS (SELECT 1 FROM cur)
          ON CONFLICT (scope, dedup_key) DO NOTHING
          RETURNING 1
        ), acq AS (
          UPDATE %1$s t SET state = 1, token = p.token, since_ms = p.now_ms,
                 deadline_ms = p.lease_until, fingerprint = p.fp, result = NULL
          FROM cur c, p
          WHERE t.scope = p.scope AND t.dedup_key = p.k AND c.deadline_ms <= p.now_ms
          RETURNING 1
        ), slide AS (
          UPDATE %1$s t SET deadline_ms = p.refresh
          FROM cur c, p
          WHERE t.scope = p.scope AND t.dedup_key = p.k AND c.deadline_ms > p.now_ms
            AND c.state = 2 AND p.refresh IS NOT NULL AND c.deadline_ms <> p.refresh
            AND NOT (c.fingerprint IS NOT NULL AND p.fp IS NOT NULL AND c.fingerprint <> p.fp)
          RETURNING 1
        )
        SELECT c.state, c.token, c.since_ms, c.deadline_ms, c.fingerprint, c.result,
               (SELECT count(*) FROM ins) + (SELECT count(*) FROM acq) AS acquired,
               (SELECT count(*) FROM slide) AS slid
        FROM p LEFT JOIN cur c ON true
        """
        .formatted(keys);
  }

  /**
   * MariaDB: one multi-row {@code INSERT IGNORE ... RETURNING} for a batch of reservations (the
   * driver reports no per-row counts for batched inserts), into the in-flight table in the
   * partitioned layout. Parameters per row as {@link #insertAbsent}.
   */
  String insertAbsentReturning(int rows) {
    boolean partitioned = layout == JdbcLayout.PARTITIONED;
    StringBuilder sb =
        new StringBuilder(120 + rows * 24)
            .append("INSERT IGNORE INTO ")
            .append(partitioned ? inflight : keys)
            .append(
                partitioned
                    ? " (scope, dedup_key, token, since_ms, deadline_ms, fingerprint) VALUES "
                    : " (scope, dedup_key, state, token, since_ms, deadline_ms, fingerprint)"
                        + " VALUES ");
    String row = partitioned ? "(?, ?, ?, ?, ?, ?)" : "(?, ?, 1, ?, ?, ?, ?)";
    for (int i = 0; i < rows; i++) {
      sb.append(i == 0 ? "" : ", ").append(row);
    }
    return sb.append(" RETURNING scope, dedup_key, token").toString();
  }

  /** Returns the name of the dialect's DDL script, a resource next to this class. */
  static String schemaResource(JdbcDialect dialect) {
    return switch (dialect) {
      case POSTGRESQL -> "schema-postgresql.sql";
      case MARIADB -> "schema-mariadb.sql";
      case H2 -> "schema-h2.sql";
    };
  }
}
