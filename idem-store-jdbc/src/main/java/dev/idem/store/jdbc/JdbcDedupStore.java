package dev.idem.store.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A {@link DedupStore} with a transactional {@link OutboxStore} in PostgreSQL, MariaDB or H2. Many
 * Idem instances may share one database: every operation is one atomic step in it.
 *
 * <ul>
 *   <li>Reserve: on PostgreSQL one statement ({@code INSERT ... ON CONFLICT DO NOTHING} and an
 *       {@code UPDATE ... WHERE deadline_ms <= now} of a row it holds {@code FOR UPDATE}, in one
 *       {@code WITH}); on MariaDB and H2 an insert-if-absent ({@code INSERT IGNORE}, {@code MERGE})
 *       and, when the key has a row, one short transaction that decides under that row's lock.
 *       Never read-then-insert: concurrent reserves of one key see exactly one {@link
 *       ReserveResult.Acquired}. The answer is what {@link DedupStateMachine#reserve} gives for the
 *       row as it was, so the store behaves exactly like the reference.
 *   <li>Commit and release: one conditional {@code UPDATE} / {@code DELETE} whose {@code WHERE}
 *       holds every condition (token, state, lease); a repeated commit with the committing token
 *       answers {@link SettleResult#APPLIED}.
 *   <li>Outbox: {@link #commitAndEnqueue} commits the key and appends the message in one
 *       transaction; {@link #claim} uses {@code FOR UPDATE SKIP LOCKED}, so concurrent claimers
 *       never get the same entry.
 *   <li>Expiry: expired rows read as absent at once; a background sweeper (and {@link
 *       #sweepExpired}) deletes them in small batches.
 * </ul>
 *
 * <p>Times are the callers' ({@code nowMillis} of each request), stored as epoch milliseconds,
 * never the database clock. Serialization failures, deadlocks and lock wait timeouts are retried a
 * bounded number of times; a database that cannot be reached is a {@link
 * StoreUnavailableException}, any other SQL error a {@link StoreException} with the SQLState.
 *
 * <p>Thread-safe. Create with {@link #builder(String)} (the store owns a HikariCP pool) or {@link
 * #builder(DataSource)} (the caller's pool), and {@link #close()} when done.
 */
public final class JdbcDedupStore implements DedupStore, OutboxStore {
  private static final System.Logger LOG = System.getLogger(JdbcDedupStore.class.getName());

  /** How often reserve re-runs after losing a race to a concurrent insert or delete of the key. */
  private static final int MAX_RACE_ROUNDS = 32;

  /** Rows per multi-row insert (MariaDB) and per JDBC batch. */
  private static final int CHUNK = 500;

  /** The key {@link #checkHealth} reads; read only, its presence does not matter. */
  private static final Scope HEALTH_SCOPE = Scope.of("idem-health-check", "probe");

  private static final DedupKey HEALTH_KEY = DedupKey.ofWords(0, 0, 0, 0);

  private static final int MAX_QUEUE_LENGTH = 255;
  private static final int MAX_ERROR_LENGTH = 4000;

  private final JdbcDialect dialect;
  private final Statements sql;
  private final SqlExecutor exec;
  private final @Nullable HikariDataSource ownedPool;
  private final String description;
  private final StoreCapabilities capabilities;
  private final TimeSource time;
  private final DedupListener listener;
  private final int sweepBatchSize;
  private final int healthCheckSeconds;
  private final @Nullable ScheduledExecutorService sweeper;
  private final ReserveUndo undo;
  private final @Nullable String instanceId;
  private final String bootId = UUID.randomUUID().toString();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** The partitioned layout's statements and partitions; null in the standard layout. */
  private final @Nullable PartitionedSql psql;

  private final @Nullable Partitions partitions;

  private JdbcDedupStore(
      JdbcDialect dialect,
      Statements sql,
      DataSource dataSource,
      @Nullable HikariDataSource ownedPool,
      String description,
      boolean durable,
      Builder b) {
    this.dialect = dialect;
    this.sql = sql;
    this.ownedPool = ownedPool;
    this.description = description;
    this.capabilities = new StoreCapabilities(false, durable, false, true);
    this.time = b.timeSource;
    this.listener = b.listener;
    this.sweepBatchSize = b.sweepBatchSize;
    this.instanceId = b.instanceId;
    this.exec = new SqlExecutor(dataSource, dialect, description, b.retries, b.timeout);
    if (sql.layout == JdbcLayout.PARTITIONED) {
      this.psql = new PartitionedSql(sql);
      this.partitions = new Partitions(sql, psql, exec);
    } else {
      this.psql = null;
      this.partitions = null;
    }
    this.healthCheckSeconds = JdbcTimeouts.backstopSeconds(b.timeout);
    this.undo =
        new ReserveUndo(
            description, b.timeout, JdbcTimeouts.socketMargin(), b.timeSource, this::release);
    if (b.sweepInterval.isZero()) {
      this.sweeper = null;
    } else {
      String name = "idem-jdbc-sweeper-" + sql.prefix;
      this.sweeper =
          Executors.newSingleThreadScheduledExecutor(
              task -> {
                Thread t = new Thread(task, name);
                t.setDaemon(true);
                return t;
              });
      long every = b.sweepInterval.toMillis();
      sweeper.scheduleWithFixedDelay(this::sweepInBackground, every, every, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Starts a store on a database URL, with a connection pool (HikariCP) the store owns and closes.
   *
   * @param jdbcUrl {@code jdbc:postgresql:...}, {@code jdbc:mariadb:...} or {@code jdbc:h2:...}
   * @return a builder
   * @throws IdemConfigException if the URL is not one of those
   */
  public static Builder builder(String jdbcUrl) {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    return new Builder(jdbcUrl.strip(), JdbcDialect.fromUrl(jdbcUrl), null);
  }

  /**
   * Starts a store on the caller's pool; the dialect comes from the database's product name. The
   * store never closes the data source. Connections may be handed out in either commit mode; the
   * store sets the one it needs and puts autocommit back on.
   *
   * @param dataSource the pool
   * @return a builder
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(null, null, Objects.requireNonNull(dataSource, "dataSource"));
  }

  // ---- reserve ----------------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>One round trip on PostgreSQL; on MariaDB and H2 one for a new key and a short row-locked
   * transaction for a key that has a row.
   */
  @Override
  public ReserveResult reserve(ReserveRequest request) {
    ensureOpen();
    try {
      return exec.write(
          "reserve",
          c ->
              psql != null
                  ? reservePartitioned(c, request)
                  : dialect == JdbcDialect.POSTGRESQL
                      ? reservePostgres(c, request)
                      : reserveLocking(c, request));
    } catch (StoreUnavailableException e) {
      if (e.outcomeUnknown()) {
        undo.schedule(List.of(request));
      }
      throw e;
    }
  }

  /**
   * The partitioned layout's reserve. One transaction inserts the in-flight row if the key has none
   * and then, on a later snapshot, looks for a live committed row (rolling the insert back if there
   * is one); a key with an in-flight row is decided under that row's lock. A live committed key's
   * sliding refresh is one {@code UPDATE} afterwards. See {@link PartitionedSql}.
   */
  private ReserveResult reservePartitioned(Connection c, ReserveRequest r) throws SQLException {
    PartitionedSql p = Objects.requireNonNull(psql);
    // MariaDB: START TRANSACTION ... COMMIT, not autocommit off and on (one round trip fewer).
    boolean explicit = p.dialect == JdbcDialect.MARIADB;
    for (int round = 0; round < MAX_RACE_ROUNDS; round++) {
      SqlExecutor.Work<Object> attempt =
          tx -> {
            boolean inserted;
            try (PreparedStatement ps = tx.prepareStatement(sql.insertAbsent)) {
              bindInsertAbsent(ps, 1, r);
              inserted = ps.executeUpdate() == 1;
            }
            if (!inserted && p.dialect == JdbcDialect.MARIADB) {
              // InnoDB's duplicate check left a shared lock on the in-flight row; asking for
              // the exclusive one below while holding it is how two reservers deadlock.
              SqlExecutor.restart(tx, explicit);
            }
            if (inserted) {
              StoredEntry latest = selectLive(tx, p, r.scope(), r.key());
              if (latest == null) {
                return DedupStateMachine.reserve(null, r).answer();
              }
              if (latest.isDeadAt(r.nowMillis())) {
                // The in-flight row replaces an expired committed one: remove that.
                try (PreparedStatement ps = tx.prepareStatement(p.deleteDead)) {
                  ps.setString(1, r.scope().toString());
                  ps.setBytes(2, r.key().toBytes());
                  ps.setLong(3, latest.deadlineMillis());
                  ps.setLong(4, r.nowMillis());
                  ps.executeUpdate();
                }
                return DedupStateMachine.reserve(latest, r).answer();
              }
              SqlExecutor.restart(tx, explicit);
              return latest;
            }
            StoredEntry current = selectEntry(tx, sql.selectForUpdate, r.scope(), r.key());
            if (current == null) {
              return null; // committed, released or forgotten since the insert: again
            }
            DedupStateMachine.Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
            if (t.changed()) {
              StoredEntry next = Objects.requireNonNull(t.next());
              if (next.state() != StoredEntry.State.IN_FLIGHT) {
                throw new StoreException(
                    "reserve of " + r.key() + " on " + description + " would commit a key");
              }
              writeLocked(tx, r.scope(), r.key(), next);
            }
            return t.answer();
          };
      Object outcome =
          explicit
              ? SqlExecutor.inExplicitTransaction(c, attempt)
              : SqlExecutor.inTransaction(c, attempt);
      if (outcome instanceof ReserveResult answer) {
        return answer;
      }
      if (outcome instanceof StoredEntry live) {
        DedupStateMachine.Transition<ReserveResult> t = DedupStateMachine.reserve(live, r);
        if (t.changed()) {
          StoredEntry next = Objects.requireNonNull(t.next());
          if (next.state() != StoredEntry.State.COMMITTED) {
            throw new StoreException(
                "reserve of " + r.key() + " on " + description + " would take over a live key");
          }
          Objects.requireNonNull(partitions).ensureFor(c, r.nowMillis(), next.deadlineMillis());
          try (PreparedStatement ps = c.prepareStatement(sql.slide)) {
            int i = 1;
            ps.setLong(i++, next.deadlineMillis());
            if (p.dialect == JdbcDialect.MARIADB) {
              ps.setInt(i++, PartitionedSql.expiryDay(next.deadlineMillis()));
            }
            ps.setString(i++, r.scope().toString());
            ps.setBytes(i++, r.key().toBytes());
            ps.setLong(i, live.deadlineMillis());
            // 0 rows: a concurrent hit slid it first; the key is a duplicate all the same.
            ps.executeUpdate();
          }
        }
        return t.answer();
      }
    }
    throw raceLost(r);
  }

  private @Nullable StoredEntry selectLive(
      Connection c, PartitionedSql p, Scope scope, DedupKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(p.selectLive)) {
      ps.setString(1, scope.toString());
      ps.setBytes(2, key.toBytes());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? readEntry(rs, 1) : null;
      }
    }
  }

  private ReserveResult reservePostgres(Connection c, ReserveRequest r) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.reserve)) {
      ps.setString(1, r.scope().toString());
      ps.setBytes(2, r.key().toBytes());
      ps.setLong(3, r.token());
      ps.setLong(4, r.nowMillis());
      ps.setLong(5, r.leaseUntil());
      setBytesOrNull(ps, 6, r.fingerprint() == null ? null : r.fingerprint().toBytes());
      if (r.ttl().expiry() == Expiry.SLIDING && r.ttl().expires()) {
        ps.setLong(7, r.ttl().expiresAt(r.nowMillis()));
      } else {
        ps.setNull(7, Types.BIGINT);
      }
      for (int round = 0; round < MAX_RACE_ROUNDS; round++) {
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            throw new StoreException("reserve on " + description + " returned no row");
          }
          StoredEntry before = readEntry(rs, 1);
          long acquired = rs.getLong(7);
          long slid = rs.getLong(8);
          if (before == null) {
            if (acquired == 1) {
              return DedupStateMachine.reserve(null, r).answer();
            }
            // Another transaction inserted the key after this statement's snapshot: run it again.
            continue;
          }
          DedupStateMachine.Transition<ReserveResult> t = DedupStateMachine.reserve(before, r);
          if (t.changed() != (acquired + slid > 0)) {
            throw new StoreException(
                "reserve of "
                    + r.key()
                    + " on "
                    + description
                    + " wrote "
                    + (acquired + slid)
                    + " rows where the reference state machine "
                    + (t.changed() ? "changes" : "keeps")
                    + " the entry; the table was changed outside Idem or its schema differs");
          }
          return t.answer();
        }
      }
    }
    throw raceLost(r);
  }

  private ReserveResult reserveLocking(Connection c, ReserveRequest r) throws SQLException {
    for (int round = 0; round < MAX_RACE_ROUNDS; round++) {
      if (insertAbsent(c, r)) {
        return DedupStateMachine.reserve(null, r).answer();
      }
      // The key has a row: decide under its lock. The insert ran in autocommit, so no shared lock
      // from its duplicate check is held here (holding one and then asking for the exclusive lock
      // is how two reservers deadlock on InnoDB).
      ReserveResult answer =
          SqlExecutor.inTransaction(
              c,
              tx -> {
                StoredEntry current = selectEntry(tx, sql.selectForUpdate, r.scope(), r.key());
                if (current == null) {
                  return null; // released, forgotten or swept since the insert: insert again
                }
                DedupStateMachine.Transition<ReserveResult> t =
                    DedupStateMachine.reserve(current, r);
                if (t.changed()) {
                  writeLocked(tx, r.scope(), r.key(), Objects.requireNonNull(t.next()));
                }
                return t.answer();
              });
      if (answer != null) {
        return answer;
      }
    }
    throw raceLost(r);
  }

  /** Inserts an in-flight row if the key has none; true if this call inserted it. */
  private boolean insertAbsent(Connection c, ReserveRequest r) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.insertAbsent)) {
      bindInsertAbsent(ps, 1, r);
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      // H2's MERGE can lose to a concurrent insert of the same key; the row exists now.
      if (dialect == JdbcDialect.H2 && SqlErrors.isDuplicateKey(e)) {
        return false;
      }
      throw e;
    }
  }

  private static void bindInsertAbsent(PreparedStatement ps, int at, ReserveRequest r)
      throws SQLException {
    ps.setString(at, r.scope().toString());
    ps.setBytes(at + 1, r.key().toBytes());
    ps.setLong(at + 2, r.token());
    ps.setLong(at + 3, r.nowMillis());
    ps.setLong(at + 4, r.leaseUntil());
    setBytesOrNull(ps, at + 5, r.fingerprint() == null ? null : r.fingerprint().toBytes());
  }

  /** Writes a reserve's new entry to a row this transaction holds locked. */
  private void writeLocked(Connection tx, Scope scope, DedupKey key, StoredEntry next)
      throws SQLException {
    if (next.state() == StoredEntry.State.IN_FLIGHT) {
      try (PreparedStatement ps = tx.prepareStatement(sql.acquire)) {
        ps.setLong(1, next.token());
        ps.setLong(2, next.sinceMillis());
        ps.setLong(3, next.deadlineMillis());
        setBytesOrNull(ps, 4, next.fingerprint() == null ? null : next.fingerprint().toBytes());
        ps.setString(5, scope.toString());
        ps.setBytes(6, key.toBytes());
        ps.executeUpdate();
      }
    } else {
      // The only change to a live committed entry is a sliding refresh of its deadline.
      try (PreparedStatement ps = tx.prepareStatement(sql.slide)) {
        ps.setLong(1, next.deadlineMillis());
        ps.setString(2, scope.toString());
        ps.setBytes(3, key.toBytes());
        ps.executeUpdate();
      }
    }
  }

  /** Every round ended with the key absent and not inserted: nothing was written. */
  private StoreUnavailableException raceLost(ReserveRequest r) {
    return new StoreUnavailableException(
        description,
        false,
        "reserve of "
            + r.key()
            + " in "
            + r.scope()
            + " on "
            + description
            + " lost "
            + MAX_RACE_ROUNDS
            + " races in a row to concurrent inserts and deletes of the key; retry");
  }

  /**
   * {@inheritDoc}
   *
   * <p>New keys are inserted in one transaction with one statement batch (PostgreSQL, H2) or one
   * multi-row {@code INSERT ... RETURNING} (MariaDB), in key order so that concurrent batches lock
   * rows in the same order; keys that already have a row are then reserved one by one. Each key's
   * outcome is the one {@link #reserve} gives; a key repeated in the batch is acquired by its first
   * occurrence and reads as in flight for the others.
   *
   * <p>In the partitioned layout the batch inserts into the in-flight table and then, in a later
   * statement of the same transaction (a later snapshot, as {@link #reserve} does), reads which of
   * the inserted keys have a committed row; those keys' in-flight rows are deleted again in the
   * same transaction and the keys reserved one by one, like the keys that had an in-flight row.
   */
  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    ensureOpen();
    int n = requests.size();
    if (n <= 1) {
      return n == 0 ? List.of() : List.of(reserve(requests.get(0)));
    }
    ReserveRequest[] rs = requests.toArray(new ReserveRequest[0]);
    Integer[] order = new Integer[n];
    String[] scopes = new String[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
      scopes[i] = rs[i].scope().toString();
    }
    Arrays.sort(order, keyOrder(scopes, rs)); // stable: repeats keep their order
    boolean[] inserted;
    try {
      inserted =
          exec.transaction(
              "reserveAll",
              c -> {
                boolean[] in =
                    dialect == JdbcDialect.MARIADB
                        ? insertAbsentReturning(c, rs, order)
                        : insertAbsentBatch(c, rs, order);
                if (psql != null) {
                  withdrawCommitted(c, psql, rs, order, in);
                }
                return in;
              });
    } catch (StoreUnavailableException e) {
      if (e.outcomeUnknown()) {
        undo.schedule(requests);
      }
      throw e;
    }
    List<ReserveResult> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(inserted[i] ? DedupStateMachine.reserve(null, rs[i]).answer() : reserve(rs[i]));
    }
    return out;
  }

  /**
   * Partitioned layout: takes back the in-flight rows this transaction inserted for keys that have
   * a committed row (live, or dead and not yet swept), and marks them not inserted, so that {@link
   * #reserve} decides them one by one.
   */
  private void withdrawCommitted(
      Connection tx, PartitionedSql p, ReserveRequest[] rs, Integer[] order, boolean[] inserted)
      throws SQLException {
    List<Integer> mine = new ArrayList<>();
    for (Integer i : order) {
      if (inserted[i]) {
        mine.add(i);
      }
    }
    for (int from = 0; from < mine.size(); from += CHUNK) {
      int to = Math.min(mine.size(), from + CHUNK);
      List<Integer> withdrawn = new ArrayList<>();
      try (PreparedStatement ps = tx.prepareStatement(p.committedAmong(to - from))) {
        if (p.dialect == JdbcDialect.POSTGRESQL) {
          byte[][] keys = new byte[to - from][];
          for (int j = from; j < to; j++) {
            keys[j - from] = rs[mine.get(j)].key().toBytes();
          }
          ps.setArray(1, tx.createArrayOf("bytea", keys));
        } else {
          for (int j = from; j < to; j++) {
            ReserveRequest r = rs[mine.get(j)];
            ps.setString(1 + (j - from) * 2, r.scope().toString());
            ps.setBytes(2 + (j - from) * 2, r.key().toBytes());
          }
        }
        try (ResultSet result = ps.executeQuery()) {
          while (result.next()) {
            String scope = result.getString(1);
            DedupKey key = DedupKey.ofDigest(result.getBytes(2));
            for (int j = from; j < to; j++) {
              int i = mine.get(j);
              if (inserted[i] && matches(rs[i], scope, key)) {
                inserted[i] = false; // a key is inserted once per batch: its first occurrence
                withdrawn.add(i);
                break;
              }
            }
          }
        }
      }
      if (!withdrawn.isEmpty()) {
        try (PreparedStatement ps = tx.prepareStatement(sql.release)) {
          for (int i : withdrawn) {
            ps.setString(1, rs[i].scope().toString());
            ps.setBytes(2, rs[i].key().toBytes());
            ps.setLong(3, rs[i].token());
            ps.setLong(4, Long.MIN_VALUE);
            ps.executeUpdate();
          }
        }
      }
    }
  }

  private static Comparator<Integer> keyOrder(String[] scopes, ReserveRequest[] rs) {
    return (a, b) -> {
      int c = scopes[a].compareTo(scopes[b]);
      for (int w = 0; c == 0 && w < 4; w++) {
        c = Long.compareUnsigned(rs[a].key().word(w), rs[b].key().word(w));
      }
      return c;
    };
  }

  private boolean[] insertAbsentBatch(Connection c, ReserveRequest[] rs, Integer[] order)
      throws SQLException {
    boolean[] inserted = new boolean[rs.length];
    try (PreparedStatement ps = c.prepareStatement(sql.insertAbsent)) {
      for (int from = 0; from < order.length; from += CHUNK) {
        int to = Math.min(order.length, from + CHUNK);
        for (int j = from; j < to; j++) {
          bindInsertAbsent(ps, 1, rs[order[j]]);
          ps.addBatch();
        }
        int[] counts;
        try {
          counts = ps.executeBatch();
        } catch (BatchUpdateException e) {
          // H2: an insert lost to a concurrent one; the rows before it (and after it, if the
          // driver went on) report their counts, the rest are reserved one by one.
          if (dialect != JdbcDialect.H2 || !SqlErrors.isDuplicateKey(e)) {
            throw e;
          }
          counts = e.getUpdateCounts();
          ps.clearBatch();
        }
        for (int j = from; j < to && j - from < counts.length; j++) {
          inserted[order[j]] = counts[j - from] == 1;
        }
      }
    }
    return inserted;
  }

  private boolean[] insertAbsentReturning(Connection c, ReserveRequest[] rs, Integer[] order)
      throws SQLException {
    boolean[] inserted = new boolean[rs.length];
    for (int from = 0; from < order.length; from += CHUNK) {
      int to = Math.min(order.length, from + CHUNK);
      Map<Long, Integer> byToken = new HashMap<>((to - from) * 2);
      try (PreparedStatement ps = c.prepareStatement(sql.insertAbsentReturning(to - from))) {
        for (int j = from; j < to; j++) {
          bindInsertAbsent(ps, 1 + (j - from) * 6, rs[order[j]]);
          byToken.putIfAbsent(rs[order[j]].token(), order[j]);
        }
        try (ResultSet result = ps.executeQuery()) {
          while (result.next()) {
            String scope = result.getString(1);
            DedupKey key = DedupKey.ofDigest(result.getBytes(2));
            long token = result.getLong(3);
            Integer i = byToken.get(token);
            if (i == null || !matches(rs[i], scope, key) || inserted[i]) {
              i = findUnmarked(rs, order, from, to, inserted, scope, key, token);
            }
            inserted[i] = true;
          }
        }
      }
    }
    return inserted;
  }

  private static boolean matches(ReserveRequest r, String scope, DedupKey key) {
    return r.key().equals(key) && r.scope().toString().equals(scope);
  }

  private int findUnmarked(
      ReserveRequest[] rs,
      Integer[] order,
      int from,
      int to,
      boolean[] inserted,
      String scope,
      DedupKey key,
      long token) {
    for (int j = from; j < to; j++) {
      int i = order[j];
      if (!inserted[i] && rs[i].token() == token && matches(rs[i], scope, key)) {
        return i;
      }
    }
    throw new StoreException(
        "reserveAll on " + description + " inserted " + key + " that no request asked for");
  }

  // ---- commit / release -------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>One {@code UPDATE ... WHERE scope, key, token, state = in flight, deadline_ms > now}; only
   * when it changes nothing, a read tells a repeated commit (already committed by this token,
   * {@link SettleResult#APPLIED}) from a stale one.
   */
  @Override
  public SettleResult commit(CommitRequest request) {
    ensureOpen();
    return exec.write("commit", c -> commitOne(c, request));
  }

  private SettleResult commitOne(Connection c, CommitRequest r) throws SQLException {
    if (partitions != null) {
      partitions.ensureFor(c, r.nowMillis(), r.ttl().expiresAt(r.nowMillis()));
    }
    if (psql != null && psql.dialect == JdbcDialect.MARIADB) {
      return commitMariaDbPartitioned(c, psql, r);
    }
    try (PreparedStatement ps = c.prepareStatement(sql.commit)) {
      bindCommit(ps, r);
      if (ps.executeUpdate() == 1) {
        return SettleResult.APPLIED;
      }
    }
    return committedWith(c, r) ? SettleResult.APPLIED : SettleResult.STALE;
  }

  /**
   * The partitioned layout's commit on MariaDB, one transaction ({@code START TRANSACTION} ...
   * {@code COMMIT}: four round trips): deletes the in-flight row held by the token (its row lock
   * fences the commit), then writes the committed row into its day's partition. See {@link
   * PartitionedSql}.
   */
  private SettleResult commitMariaDbPartitioned(Connection c, PartitionedSql p, CommitRequest r)
      throws SQLException {
    boolean applied = SqlExecutor.inExplicitTransaction(c, tx -> moveToCommitted(tx, p, r));
    return applied || committedWith(c, r) ? SettleResult.APPLIED : SettleResult.STALE;
  }

  /** The steps of {@link #commitMariaDbPartitioned} in the caller's transaction. */
  private static boolean moveToCommitted(Connection tx, PartitionedSql p, CommitRequest r)
      throws SQLException {
    byte[] fingerprint;
    try (PreparedStatement ps = tx.prepareStatement(p.takeInflight)) {
      ps.setString(1, r.scope().toString());
      ps.setBytes(2, r.key().toBytes());
      ps.setLong(3, r.token());
      ps.setLong(4, r.nowMillis());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        fingerprint = rs.getBytes(1);
      }
    }
    long deadline = r.ttl().expiresAt(r.nowMillis());
    try (PreparedStatement ps = tx.prepareStatement(p.insertCommitted)) {
      ps.setString(1, r.scope().toString());
      ps.setBytes(2, r.key().toBytes());
      ps.setInt(3, PartitionedSql.expiryDay(deadline));
      ps.setLong(4, r.token());
      ps.setLong(5, r.nowMillis());
      ps.setLong(6, deadline);
      setBytesOrNull(ps, 7, fingerprint);
      setBytesOrNull(ps, 8, r.result());
      ps.executeUpdate();
    }
    return true;
  }

  /**
   * {@link #commitAll} in the partitioned layout on MariaDB, in the caller's transaction, per chunk
   * of keys in key order: deletes their in-flight rows held by the committing token and not expired
   * in one statement ({@link PartitionedSql#takeInflightRows}, whose javadoc says why one) and
   * writes their committed rows in one multi-row insert; the steps of {@link #moveToCommitted} for
   * many keys at once. A key repeated in the batch is moved by its first commit; the others, like
   * stale ones, are answered by {@link #committedWith}.
   */
  private SettleResult[] moveAllToCommitted(Connection tx, PartitionedSql p, CommitRequest[] rs)
      throws SQLException {
    int n = rs.length;
    Integer[] order = new Integer[n];
    String[] scopes = new String[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
      scopes[i] = rs[i].scope().toString();
    }
    Arrays.sort(
        order,
        (a, b) -> {
          int c = scopes[a].compareTo(scopes[b]);
          for (int w = 0; c == 0 && w < 4; w++) {
            c = Long.compareUnsigned(rs[a].key().word(w), rs[b].key().word(w));
          }
          return c;
        });
    SettleResult[] out = new SettleResult[n];
    for (int from = 0; from < n; from += CHUNK) {
      int to = Math.min(n, from + CHUNK);
      // scope + key + token -> the deadline and fingerprint of the in-flight row it held
      Map<String, Object[]> rows = new HashMap<>((to - from) * 2);
      long earliest = Long.MAX_VALUE;
      try (PreparedStatement ps = tx.prepareStatement(p.takeInflightRows(to - from))) {
        for (int j = from; j < to; j++) {
          CommitRequest r = rs[order[j]];
          ps.setString(1 + (j - from) * 3, scopes[order[j]]);
          ps.setBytes(2 + (j - from) * 3, r.key().toBytes());
          ps.setLong(3 + (j - from) * 3, r.token());
          earliest = Math.min(earliest, r.nowMillis());
        }
        ps.setLong(1 + (to - from) * 3, earliest);
        try (ResultSet result = ps.executeQuery()) {
          while (result.next()) {
            String id =
                result.getString(1)
                    + '\n'
                    + DedupKey.ofDigest(result.getBytes(2))
                    + '\n'
                    + result.getLong(3);
            rows.put(id, new Object[] {result.getLong(4), result.getBytes(5)});
          }
        }
      }
      List<Integer> moved = new ArrayList<>();
      List<byte[]> fingerprints = new ArrayList<>();
      for (int j = from; j < to; j++) {
        CommitRequest r = rs[order[j]];
        // A repeat in the batch, or another token's commit of the key, finds none. A lease that
        // expired by its own commit's clock but not by the chunk's earliest one was deleted like
        // a release (its key was free for a new reserve already) and answers stale.
        Object[] row = rows.remove(scopes[order[j]] + '\n' + r.key() + '\n' + r.token());
        if (row != null && (long) row[0] > r.nowMillis()) {
          moved.add(order[j]);
          fingerprints.add((byte[]) row[1]);
          out[order[j]] = SettleResult.APPLIED;
        }
      }
      if (!moved.isEmpty()) {
        try (PreparedStatement ps = tx.prepareStatement(p.insertCommittedRows(moved.size()))) {
          for (int m = 0; m < moved.size(); m++) {
            CommitRequest r = rs[moved.get(m)];
            long deadline = r.ttl().expiresAt(r.nowMillis());
            int at = m * 8;
            ps.setString(at + 1, scopes[moved.get(m)]);
            ps.setBytes(at + 2, r.key().toBytes());
            ps.setInt(at + 3, PartitionedSql.expiryDay(deadline));
            ps.setLong(at + 4, r.token());
            ps.setLong(at + 5, r.nowMillis());
            ps.setLong(at + 6, deadline);
            setBytesOrNull(ps, at + 7, fingerprints.get(m));
            setBytesOrNull(ps, at + 8, r.result());
          }
          ps.executeUpdate();
        }
      }
    }
    for (int i = 0; i < n; i++) {
      if (out[i] == null) {
        out[i] = committedWith(tx, rs[i]) ? SettleResult.APPLIED : SettleResult.STALE;
      }
    }
    return out;
  }

  /**
   * Commits a key inside the caller's transaction (the commit statement, or the partitioned
   * layout's two steps on MariaDB); true if this call committed it.
   */
  private boolean commitKey(Connection tx, CommitRequest r) throws SQLException {
    if (psql != null && psql.dialect == JdbcDialect.MARIADB) {
      return moveToCommitted(tx, psql, r);
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.commit)) {
      bindCommit(ps, r);
      return ps.executeUpdate() == 1;
    }
  }

  /** Partitioned layout: creates the partition of the commit's deadline if it is missing. */
  private void ensurePartition(CommitRequest r) {
    if (partitions != null) {
      partitions.ensureFor(r.nowMillis(), r.ttl().expiresAt(r.nowMillis()));
    }
  }

  private static void bindCommit(PreparedStatement ps, CommitRequest r) throws SQLException {
    ps.setLong(1, r.nowMillis());
    ps.setLong(2, r.ttl().expiresAt(r.nowMillis()));
    setBytesOrNull(ps, 3, r.result());
    ps.setString(4, r.scope().toString());
    ps.setBytes(5, r.key().toBytes());
    ps.setLong(6, r.token());
    ps.setLong(7, r.nowMillis());
  }

  private boolean committedWith(Connection c, CommitRequest r) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.committedWith)) {
      ps.setString(1, r.scope().toString());
      ps.setBytes(2, r.key().toBytes());
      ps.setLong(3, r.token());
      ps.setLong(4, r.nowMillis());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>One JDBC batch of the commit statement in one transaction.
   */
  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    ensureOpen();
    if (requests.isEmpty()) {
      return List.of();
    }
    CommitRequest[] rs = requests.toArray(new CommitRequest[0]);
    for (CommitRequest r : rs) {
      ensurePartition(r);
    }
    if (psql != null && psql.dialect == JdbcDialect.MARIADB) {
      PartitionedSql p = psql;
      return exec.transaction("commitAll", c -> List.of(moveAllToCommitted(c, p, rs)));
    }
    return exec.transaction(
        "commitAll",
        c -> {
          SettleResult[] out = new SettleResult[rs.length];
          try (PreparedStatement ps = c.prepareStatement(sql.commit)) {
            for (int from = 0; from < rs.length; from += CHUNK) {
              int to = Math.min(rs.length, from + CHUNK);
              for (int i = from; i < to; i++) {
                bindCommit(ps, rs[i]);
                ps.addBatch();
              }
              int[] counts = ps.executeBatch();
              for (int i = from; i < to; i++) {
                // 0: stale or a repeated commit; SUCCESS_NO_INFO: the driver did not say. Either
                // way, a row committed by this token now means this commit applied.
                out[i] =
                    counts[i - from] > 0 || committedWith(c, rs[i])
                        ? SettleResult.APPLIED
                        : SettleResult.STALE;
              }
            }
          }
          return List.of(out);
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>One {@code DELETE ... WHERE scope, key, token, state = in flight, deadline_ms > now}.
   */
  @Override
  public SettleResult release(ReleaseRequest request) {
    ensureOpen();
    return exec.write(
        "release",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.release)) {
            bindRelease(ps, request);
            return ps.executeUpdate() == 1 ? SettleResult.APPLIED : SettleResult.STALE;
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>One {@code UPDATE ... SET deadline_ms = GREATEST(deadline_ms, until) WHERE scope, key,
   * token, state = in flight, deadline_ms > now}. Only when it reports no row, a read tells an
   * extend that matched but changed nothing (MariaDB with {@code useAffectedRows} counts changed
   * rows only) from a stale one.
   */
  @Override
  public SettleResult extend(ExtendRequest request) {
    ensureOpen();
    return exec.write(
        "extend",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.extend)) {
            ps.setLong(1, request.leaseUntil());
            ps.setString(2, request.scope().toString());
            ps.setBytes(3, request.key().toBytes());
            ps.setLong(4, request.token());
            ps.setLong(5, request.nowMillis());
            if (ps.executeUpdate() == 1) {
              return SettleResult.APPLIED;
            }
          }
          try (PreparedStatement ps = c.prepareStatement(sql.heldWith)) {
            ps.setString(1, request.scope().toString());
            ps.setBytes(2, request.key().toBytes());
            ps.setLong(3, request.token());
            ps.setLong(4, request.nowMillis());
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next() ? SettleResult.APPLIED : SettleResult.STALE;
            }
          }
        });
  }

  private static void bindRelease(PreparedStatement ps, ReleaseRequest r) throws SQLException {
    ps.setString(1, r.scope().toString());
    ps.setBytes(2, r.key().toBytes());
    ps.setLong(3, r.token());
    ps.setLong(4, r.nowMillis());
  }

  /**
   * {@inheritDoc}
   *
   * <p>One JDBC batch of the release statement in one transaction.
   */
  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    ensureOpen();
    if (requests.isEmpty()) {
      return List.of();
    }
    ReleaseRequest[] rs = requests.toArray(new ReleaseRequest[0]);
    List<SettleResult> batched =
        exec.transaction(
            "releaseAll",
            c -> {
              SettleResult[] out = new SettleResult[rs.length];
              try (PreparedStatement ps = c.prepareStatement(sql.release)) {
                for (int from = 0; from < rs.length; from += CHUNK) {
                  int to = Math.min(rs.length, from + CHUNK);
                  for (int i = from; i < to; i++) {
                    bindRelease(ps, rs[i]);
                    ps.addBatch();
                  }
                  int[] counts = ps.executeBatch();
                  for (int i = from; i < to; i++) {
                    int count = counts[i - from];
                    if (count == Statement.SUCCESS_NO_INFO) {
                      // The driver batched without per-row counts: undo, and release one by one.
                      c.rollback();
                      return null;
                    }
                    out[i] = count > 0 ? SettleResult.APPLIED : SettleResult.STALE;
                  }
                }
              }
              return List.of(out);
            });
    return batched != null ? batched : DedupStore.super.releaseAll(requests);
  }

  // ---- reads and admin --------------------------------------------------------------------------

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    ensureOpen();
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    StoredEntry entry = exec.read("inspect", c -> selectEntry(c, sql.select, scope, key));
    return DedupStateMachine.inspect(entry, nowMillis);
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    ensureOpen();
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    if (psql != null && psql.dialect == JdbcDialect.MARIADB) {
      PartitionedSql p = psql;
      return exec.transaction(
          "forget",
          c -> {
            long mark = Long.MIN_VALUE;
            try (PreparedStatement ps = c.prepareStatement(p.readMark);
                ResultSet rs = ps.executeQuery()) {
              if (rs.next()) {
                mark = rs.getLong(1);
              }
            }
            long removed = 0;
            for (String statement : new String[] {p.forgetInflight, p.forgetCommitted}) {
              try (PreparedStatement ps = c.prepareStatement(statement)) {
                ps.setString(1, scope.toString());
                ps.setBytes(2, key.toBytes());
                try (ResultSet rs = ps.executeQuery()) {
                  while (rs.next()) {
                    removed += rs.getLong(1) > mark ? 1 : 0;
                  }
                }
              }
            }
            return removed > 0;
          });
    }
    return exec.write(
        "forget",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.forget)) {
            ps.setString(1, scope.toString());
            ps.setBytes(2, key.toBytes());
            if (psql == null) {
              return ps.executeUpdate() > 0;
            }
            // Partitioned: the count of removed rows a sweep had not already removed logically.
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getLong(1) > 0;
            }
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Deletes in batches of the sweep batch size, each its own short statement, so clearing a
   * large scope never holds many row locks at once. Keys reserved in the scope while it runs may
   * survive it.
   */
  @Override
  public long clear(Scope scope) {
    ensureOpen();
    String s = Objects.requireNonNull(scope, "scope").toString();
    if (psql != null) {
      return clearPartitioned(s, sql.clearBatch) + clearPartitioned(s, psql.clearCommitted);
    }
    long total = 0;
    int deleted;
    do {
      deleted =
          exec.write(
              "clear",
              c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.clearBatch)) {
                  int i = 1;
                  ps.setString(i++, s);
                  if (dialect == JdbcDialect.POSTGRESQL) {
                    ps.setString(i++, s);
                  }
                  ps.setInt(i, sweepBatchSize);
                  return ps.executeUpdate();
                }
              });
      total += deleted;
    } while (deleted >= sweepBatchSize);
    return total;
  }

  /** Clears one table of the partitioned layout; returns the rows past the sweep mark. */
  private long clearPartitioned(String scope, String statement) {
    long total = 0;
    long[] deleted;
    do {
      deleted =
          exec.write(
              "clear",
              c -> {
                try (PreparedStatement ps = c.prepareStatement(statement)) {
                  ps.setString(1, scope);
                  ps.setInt(2, sweepBatchSize);
                  if (dialect == JdbcDialect.MARIADB) {
                    // DELETE ... LIMIT ... RETURNING deadline_ms: counted here against the mark.
                    long mark = Long.MIN_VALUE;
                    try (PreparedStatement m =
                            c.prepareStatement(Objects.requireNonNull(psql).readMark);
                        ResultSet rs = m.executeQuery()) {
                      if (rs.next()) {
                        mark = rs.getLong(1);
                      }
                    }
                    long all = 0;
                    long live = 0;
                    try (ResultSet rs = ps.executeQuery()) {
                      while (rs.next()) {
                        all++;
                        live += rs.getLong(1) > mark ? 1 : 0;
                      }
                    }
                    return new long[] {all, live};
                  }
                  ps.setString(3, scope);
                  try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new long[] {rs.getLong(1), rs.getLong(2)};
                  }
                }
              });
      total += deleted[1];
    } while (deleted[0] >= sweepBatchSize);
    return total;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Deletes rows with {@code deadline_ms <= nowMillis} in batches of the sweep batch size, each
   * one short statement that re-checks the deadline itself (a key reserved again meanwhile stays);
   * on PostgreSQL rows locked by a reserve or commit in progress are skipped, not waited for. The
   * store's listener hears {@link DedupListener#onExpired} for each removed key.
   */
  @Override
  public long sweepExpired(long nowMillis) {
    ensureOpen();
    if (psql != null) {
      exec.write(
          "sweepExpired",
          c -> {
            try (PreparedStatement ps = c.prepareStatement(psql.markSwept)) {
              ps.setLong(1, nowMillis);
              return ps.executeUpdate();
            }
          });
    }
    long total = 0;
    int deleted;
    do {
      deleted = exec.write("sweepExpired", c -> sweepBatch(c, nowMillis));
      total += deleted;
    } while (deleted >= sweepBatchSize && !closed.get());
    if (partitions != null) {
      total += dropExpiredPartitions(nowMillis);
      partitions.createAhead(nowMillis);
    }
    return total;
  }

  /**
   * Partitioned layout: drops every day partition whose day ended at or before {@code now} (all its
   * rows are dead); with a listener, reads the partition's keys for it first. Returns the planner's
   * row estimate of the dropped partitions (their exact count would cost a scan).
   */
  private long dropExpiredPartitions(long now) {
    Partitions parts = Objects.requireNonNull(partitions);
    List<Partitions.Partition> all = exec.read("sweepExpired", parts::list);
    long removed = 0;
    for (Partitions.Partition part : all) {
      if (closed.get() || (part.day() + 1) * PartitionedSql.DAY_MILLIS > now) {
        break;
      }
      if (listener != DedupListener.NOOP) {
        exec.read(
            "sweepExpired",
            c ->
                SqlExecutor.inTransaction(
                    c,
                    tx -> {
                      // A cursor (autocommit off, a fetch size): the partition is read in pages,
                      // each its own round trip, not as one result held in memory.
                      try (Statement st = tx.createStatement()) {
                        st.setFetchSize(sweepBatchSize);
                        try (ResultSet rs =
                            st.executeQuery(
                                Objects.requireNonNull(psql).selectPartitionKeys(part.name()))) {
                          while (rs.next()) {
                            notifyExpired(rs.getString(1), rs.getBytes(2), false);
                          }
                        }
                      }
                      return null;
                    }));
      }
      if (exec.write("sweepExpired", c -> parts.drop(c, part))) {
        removed += Math.max(0, Math.round(part.rowEstimate()));
      }
    }
    return removed;
  }

  private int sweepBatch(Connection c, long now) throws SQLException {
    boolean report = listener != DedupListener.NOOP;
    try (PreparedStatement ps =
        c.prepareStatement(report ? sql.sweepBatchReturning : sql.sweepBatch)) {
      ps.setLong(1, now);
      ps.setInt(2, sweepBatchSize);
      if (dialect == JdbcDialect.POSTGRESQL) {
        ps.setLong(3, now);
      }
      if (!report) {
        return ps.executeUpdate();
      }
      int n = 0;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          n++;
          notifyExpired(rs.getString(1), rs.getBytes(2), rs.getInt(3) == Statements.IN_FLIGHT);
        }
      }
      return n;
    }
  }

  private void notifyExpired(String scope, byte[] key, boolean leaseExpired) {
    try {
      listener.onExpired(Scope.parse(scope), DedupKey.ofDigest(key), leaseExpired);
    } catch (RuntimeException e) {
      // A listener must never break the store; a row written outside Idem must not either.
      LOG.log(System.Logger.Level.DEBUG, "expiry listener failed for " + scope, e);
    }
  }

  private void sweepInBackground() {
    if (closed.get()) {
      return;
    }
    try {
      long removed = sweepExpired(time.wallMillis());
      if (removed > 0) {
        LOG.log(System.Logger.Level.DEBUG, "swept {0} expired keys from {1}", removed, description);
      }
    } catch (RuntimeException e) {
      if (!closed.get()) {
        LOG.log(
            System.Logger.Level.WARNING,
            "sweeping expired keys from " + description + " failed; will try again: " + e);
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Borrows a connection, checks it with {@link Connection#isValid(int)} and reads one (absent)
   * key from the keys table, bounded by the store's timeout: a table another session holds locked
   * fails the check as it fails reserves.
   */
  @Override
  public void checkHealth() {
    ensureOpen();
    exec.read(
        "checkHealth",
        c -> {
          if (!c.isValid(healthCheckSeconds)) {
            throw new SQLException("the connection did not answer a validity check", "08000");
          }
          return selectEntry(c, sql.select, HEALTH_SCOPE, HEALTH_KEY);
        });
  }

  @Override
  public StoreCapabilities capabilities() {
    return capabilities;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The JDBC URL with any password masked, and the table prefix, e.g. {@code
   * jdbc:postgresql://db:5432/idem [idem_*]}.
   */
  @Override
  public String describe() {
    return description;
  }

  /**
   * Returns the database this store talks to.
   *
   * @return the dialect
   */
  public JdbcDialect dialect() {
    return dialect;
  }

  /**
   * Returns the DDL the store runs for its tables (the {@code schema-<database>.sql} script with
   * the table prefix filled in), for operators who create the tables themselves and build the store
   * with {@code createSchema(false)}.
   *
   * @param dialect the database
   * @param tablePrefix the table prefix, e.g. {@code idem_}
   * @return the statements, in order, without trailing semicolons
   * @throws IdemConfigException if the prefix is not allowed
   */
  public static List<String> schemaDdl(JdbcDialect dialect, String tablePrefix) {
    Statements s = new Statements(Objects.requireNonNull(dialect, "dialect"), tablePrefix);
    return Schema.script(dialect, s.prefix);
  }

  /**
   * Returns the DDL of one layout, like {@link #schemaDdl(JdbcDialect, String)}; for {@link
   * JdbcLayout#PARTITIONED} (PostgreSQL and MariaDB) the day partitions are not part of it: the
   * store creates them as commits need them (its login needs the right to create tables on
   * PostgreSQL, to alter its keys table on MariaDB).
   *
   * @param dialect the database
   * @param tablePrefix the table prefix, e.g. {@code idem_}
   * @param layout the key layout
   * @return the statements, in order, without trailing semicolons
   * @throws IdemConfigException if the prefix is not allowed, or the layout not on this database
   */
  public static List<String> schemaDdl(JdbcDialect dialect, String tablePrefix, JdbcLayout layout) {
    Statements s =
        new Statements(
            Objects.requireNonNull(dialect, "dialect"),
            tablePrefix,
            Objects.requireNonNull(layout, "layout"));
    return Schema.script(dialect, s.prefix, layout);
  }

  /**
   * Returns the key layout of this store.
   *
   * @return the layout
   */
  public JdbcLayout layout() {
    return sql.layout;
  }

  /**
   * Stops the sweeper and, for a store built from a URL, closes its connection pool. Idempotent;
   * other calls fail with {@link IllegalStateException} afterwards.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    undo.close();
    if (sweeper != null) {
      // No interrupt: an interrupted H2 file database closes its file.
      sweeper.shutdown();
      try {
        if (!sweeper.awaitTermination(10, TimeUnit.SECONDS)) {
          sweeper.shutdownNow();
        }
      } catch (InterruptedException e) {
        sweeper.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
    if (ownedPool != null) {
      ownedPool.close();
    }
  }

  // ---- outbox -----------------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>One transaction: the commit's {@code UPDATE}, then the outbox {@code INSERT}. A stale commit
   * appends nothing. A repeated commit with the token that committed answers {@link
   * SettleResult#APPLIED} and appends nothing either: its message went in with the first commit
   * (same transaction), so retrying after an unknown outcome never enqueues twice.
   */
  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    ensureOpen();
    Objects.requireNonNull(commit, "commit");
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    List<OutboxMessage> copy = List.copyOf(messages);
    for (OutboxMessage message : copy) {
      checkQueue(message.queue());
    }
    ensurePartition(commit);
    return exec.transaction(
        "commitAndEnqueue",
        c -> {
          if (!commitKey(c, commit)) {
            return committedWith(c, commit) ? SettleResult.APPLIED : SettleResult.STALE;
          }
          lockOrderingKeys(c, copy);
          try (PreparedStatement ps = c.prepareStatement(sql.enqueue)) {
            for (OutboxMessage message : copy) {
              ps.setString(1, message.queue());
              ps.setBytes(2, message.key().toBytes());
              ps.setBytes(3, message.payload());
              ps.setLong(4, commit.nowMillis());
              ps.setLong(5, commit.nowMillis());
              ps.setString(6, message.orderingKey());
              if (copy.size() == 1) {
                ps.executeUpdate();
              } else {
                ps.addBatch();
              }
            }
            if (copy.size() > 1) {
              ps.executeBatch();
            }
          }
          return SettleResult.APPLIED;
        });
  }

  /**
   * Row-locks the row of each ordering key of the messages (creating it if missing), in a fixed
   * order so that two transactions never wait for each other in a cycle: the enqueues of one key
   * then take their ids one after another, in commit order.
   */
  private void lockOrderingKeys(Connection c, List<OutboxMessage> messages) throws SQLException {
    TreeSet<String[]> keys =
        new TreeSet<>(Comparator.<String[], String>comparing(k -> k[0]).thenComparing(k -> k[1]));
    for (OutboxMessage m : messages) {
      if (m.orderingKey() != null) {
        keys.add(new String[] {m.queue(), m.orderingKey()});
      }
    }
    if (keys.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(sql.lockOrderingKey)) {
      for (String[] k : keys) {
        ps.setString(1, k[0]);
        ps.setString(2, k[1]);
        ps.executeUpdate();
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Ordering keys: each enqueue of a message with an ordering key first row-locks that key's row
   * in {@code <prefix>outbox_keys} (a per-key row, created on first use), so the entries of one key
   * get their ids in commit order. A claim then picks, without locks, the claimable entries that
   * have no ordering key or are the oldest entry of theirs (by id, through the index {@code (queue,
   * ordering_key, id)}), and row-locks them with {@code FOR UPDATE SKIP LOCKED}, which checks again
   * on each row's latest version that it may still be claimed. Two claimers thus never get two
   * entries of one key: the second entry of a key is not its oldest while the first is there, and a
   * reader can never see a key's later entry without its earlier ones.
   *
   * <p>PostgreSQL: one statement (the pick, the locking read and the {@code UPDATE}); MariaDB and
   * H2: the pick, the locking read and the update in one transaction.
   */
  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    ensureOpen();
    checkQueue(queue);
    if (max <= 0) {
      throw new IllegalArgumentException("max must be positive, got " + max);
    }
    if (claimMillis <= 0) {
      throw new IllegalArgumentException("claimMillis must be positive, got " + claimMillis);
    }
    long until = nowMillis + claimMillis < nowMillis ? Long.MAX_VALUE : nowMillis + claimMillis;
    if (dialect == JdbcDialect.POSTGRESQL) {
      return exec.write(
          "claim",
          c -> {
            List<OutboxRecord> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.claim)) {
              ps.setString(1, queue);
              ps.setLong(2, nowMillis);
              ps.setLong(3, nowMillis);
              ps.setInt(4, max);
              ps.setLong(5, nowMillis);
              ps.setLong(6, nowMillis);
              ps.setLong(7, until);
              ps.setString(8, instanceId);
              ps.setString(9, bootId);
              try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                  out.add(readRecord(rs, queue, 0));
                }
              }
            }
            out.sort(Comparator.comparingLong(OutboxRecord::id));
            return out;
          });
    }
    return exec.transaction(
        "claim",
        c -> {
          List<OutboxRecord> out = new ArrayList<>();
          List<Long> heads = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement(sql.selectClaimableHeads)) {
            ps.setString(1, queue);
            ps.setLong(2, nowMillis);
            ps.setLong(3, nowMillis);
            ps.setInt(4, max);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                heads.add(rs.getLong(1));
              }
            }
          }
          if (heads.isEmpty()) {
            return out;
          }
          try (PreparedStatement ps = c.prepareStatement(sql.selectClaimableByIds(heads.size()))) {
            int i = 1;
            for (long id : heads) {
              ps.setLong(i++, id);
            }
            ps.setString(i++, queue);
            ps.setLong(i++, nowMillis);
            ps.setLong(i, nowMillis);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(readRecord(rs, queue, 1));
              }
            }
          }
          if (!out.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(sql.markClaimed)) {
              for (OutboxRecord r : out) {
                ps.setLong(1, until);
                ps.setString(2, instanceId);
                ps.setString(3, bootId);
                ps.setLong(4, r.id());
                ps.addBatch();
              }
              ps.executeBatch();
            }
          }
          return out;
        });
  }

  private static OutboxRecord readRecord(ResultSet rs, String queue, int addAttempts)
      throws SQLException {
    return new OutboxRecord(
        rs.getLong(1),
        queue,
        DedupKey.ofDigest(rs.getBytes(2)),
        rs.getBytes(3),
        rs.getInt(4) + addAttempts,
        rs.getLong(5),
        rs.getString(6));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: each claim records the store's {@linkplain Builder#instanceId instance id} and a
   * random id of this opened store (its boot id). One {@code UPDATE} makes claimable at once the
   * queue's entries still claimed (not rescheduled: a scheduled retry keeps its time) under this
   * instance id by another boot id, that is, by an earlier life of this instance. Without an
   * instance id it releases nothing, as a live instance's claims cannot be told apart. Two live
   * stores with the same instance id would release each other's claims.
   */
  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    ensureOpen();
    checkQueue(queue);
    String claimant = instanceId;
    if (claimant == null) {
      return 0;
    }
    return exec.write(
        "releaseClaimsOfEarlierRuns",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.releaseEarlierClaims)) {
            ps.setString(1, queue);
            ps.setString(2, claimant);
            ps.setString(3, bootId);
            return (long) ps.executeUpdate();
          }
        });
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    ensureOpen();
    checkQueue(queue);
    return exec.write(
        "acknowledge",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.acknowledge)) {
            ps.setString(1, queue);
            ps.setLong(2, id);
            return ps.executeUpdate() > 0;
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one {@code DELETE} that also matches the claim's attempts.
   */
  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    ensureOpen();
    checkQueue(claimed.queue());
    return exec.write(
        "acknowledge",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.acknowledgeFenced)) {
            ps.setString(1, claimed.queue());
            ps.setLong(2, claimed.id());
            ps.setInt(3, claimed.attempts());
            return ps.executeUpdate() > 0;
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: one {@code UPDATE} that also matches the claim's attempts. The error is kept up to
   * 4000 characters.
   */
  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    ensureOpen();
    checkQueue(claimed.queue());
    String e = truncate(Objects.requireNonNull(error, "error"));
    return exec.write(
        "reschedule",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.rescheduleFenced)) {
            ps.setLong(1, notBeforeMillis);
            ps.setString(2, e);
            ps.setString(3, claimed.queue());
            ps.setLong(4, claimed.id());
            ps.setInt(5, claimed.attempts());
            return ps.executeUpdate() > 0;
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: as {@link #deadLetter(String, long, String, long)}, matching the claim's attempts.
   */
  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    ensureOpen();
    checkQueue(claimed.queue());
    return moveToDeadLetters(
            claimed.queue(),
            claimed.id(),
            claimed.attempts(),
            truncate(Objects.requireNonNull(reason, "reason")),
            nowMillis)
        > 0;
  }

  /**
   * {@inheritDoc}
   *
   * <p>An entry that is no longer there (acknowledged or dead lettered) is left alone. The error is
   * kept up to 4000 characters.
   */
  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    ensureOpen();
    checkQueue(queue);
    String e = truncate(Objects.requireNonNull(error, "error"));
    exec.write(
        "reschedule",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.reschedule)) {
            ps.setLong(1, notBeforeMillis);
            ps.setString(2, e);
            ps.setString(3, queue);
            ps.setLong(4, id);
            return ps.executeUpdate();
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>PostgreSQL: one {@code DELETE ... RETURNING} feeding an {@code INSERT}; MariaDB and H2:
   * lock, copy and delete in one transaction. An entry that is no longer there is left alone. The
   * reason is kept up to 4000 characters.
   */
  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    ensureOpen();
    checkQueue(queue);
    moveToDeadLetters(queue, id, -1, truncate(Objects.requireNonNull(reason, "reason")), nowMillis);
  }

  /** Moves an entry (still under claim {@code fence}, unless it is -1) to the dead letters. */
  private int moveToDeadLetters(String queue, long id, int fence, String why, long nowMillis) {
    if (dialect == JdbcDialect.POSTGRESQL) {
      return exec.write(
          "deadLetter",
          c -> {
            try (PreparedStatement ps =
                c.prepareStatement(fence < 0 ? sql.deadLetter : sql.deadLetterFenced)) {
              int i = 1;
              ps.setString(i++, queue);
              ps.setLong(i++, id);
              if (fence >= 0) {
                ps.setInt(i++, fence);
              }
              ps.setLong(i++, nowMillis);
              ps.setString(i, why);
              return ps.executeUpdate();
            }
          });
    }
    return exec.transaction(
        "deadLetter",
        c -> {
          try (PreparedStatement lock =
              c.prepareStatement(fence < 0 ? sql.lockOutboxRow : sql.lockOutboxRowFenced)) {
            lock.setString(1, queue);
            lock.setLong(2, id);
            if (fence >= 0) {
              lock.setInt(3, fence);
            }
            try (ResultSet rs = lock.executeQuery()) {
              if (!rs.next()) {
                return 0;
              }
            }
          }
          try (PreparedStatement copy = c.prepareStatement(sql.copyToDeadLetters)) {
            copy.setLong(1, nowMillis);
            copy.setString(2, why);
            copy.setString(3, queue);
            copy.setLong(4, id);
            copy.executeUpdate();
          }
          try (PreparedStatement delete = c.prepareStatement(sql.deleteOutboxRow)) {
            delete.setString(1, queue);
            delete.setLong(2, id);
            return delete.executeUpdate();
          }
        });
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    ensureOpen();
    checkQueue(queue);
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive, got " + limit);
    }
    return exec.read(
        "deadLetters",
        c -> {
          List<DeadLetter> out = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement(sql.deadLettersOf)) {
            ps.setString(1, queue);
            ps.setInt(2, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(
                    new DeadLetter(
                        rs.getLong(1),
                        queue,
                        DedupKey.ofDigest(rs.getBytes(2)),
                        rs.getBytes(3),
                        rs.getInt(4),
                        rs.getLong(5),
                        rs.getLong(6),
                        rs.getString(7)));
              }
            }
          }
          return out;
        });
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    ensureOpen();
    checkQueue(queue);
    return exec.read(
        "deadLetters",
        c -> {
          List<DeadLetter> out = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement(sql.deadLettersPage)) {
            ps.setString(1, queue);
            ps.setLong(2, query.sinceMillis());
            ps.setLong(3, query.untilMillis());
            ps.setLong(4, query.beforeDeadAtMillis());
            ps.setLong(5, query.beforeDeadAtMillis());
            ps.setLong(6, query.beforeId());
            ps.setInt(7, query.limit());
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(deadLetterAt(rs, queue));
              }
            }
          }
          return out;
        });
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    ensureOpen();
    checkQueue(queue);
    return exec.read(
        "findDeadLetter",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.deadLetterById)) {
            ps.setString(1, queue);
            ps.setLong(2, id);
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next() ? Optional.of(deadLetterAt(rs, queue)) : Optional.empty();
            }
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>One transaction: lock the dead letter's row, lock its ordering key's row (if it had one),
   * append it to the outbox with its ordering key, delete it.
   */
  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    ensureOpen();
    checkQueue(queue);
    return exec.transaction(
        "requeueDeadLetter",
        c -> {
          DeadLetter d;
          String orderingKey;
          try (PreparedStatement lock = c.prepareStatement(sql.lockDeadLetter)) {
            lock.setString(1, queue);
            lock.setLong(2, id);
            try (ResultSet rs = lock.executeQuery()) {
              if (!rs.next()) {
                return OptionalLong.empty();
              }
              d = deadLetterAt(rs, queue);
              orderingKey = rs.getString(8);
            }
          }
          // Back into its ordering key's mailbox, behind the key's waiting entries: the key's row
          // lock gives its id the place in commit order, as for an accept.
          lockOrderingKeys(c, List.of(new OutboxMessage(queue, d.key(), d.payload(), orderingKey)));
          long newId;
          try (PreparedStatement ps = c.prepareStatement(sql.enqueue, new String[] {"id"})) {
            ps.setString(1, queue);
            ps.setBytes(2, d.key().toBytes());
            ps.setBytes(3, d.payload());
            ps.setLong(4, nowMillis);
            ps.setLong(5, nowMillis);
            if (orderingKey == null) {
              ps.setNull(6, Types.VARCHAR);
            } else {
              ps.setString(6, orderingKey);
            }
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
              if (!keys.next()) {
                throw new SQLException("the outbox insert returned no id");
              }
              newId = keys.getLong(1);
            }
          }
          try (PreparedStatement delete = c.prepareStatement(sql.deleteDeadLetter)) {
            delete.setString(1, queue);
            delete.setLong(2, id);
            delete.executeUpdate();
          }
          return OptionalLong.of(newId);
        });
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    ensureOpen();
    checkQueue(queue);
    return exec.write(
        "purgeDeadLetter",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.deleteDeadLetter)) {
            ps.setString(1, queue);
            ps.setLong(2, id);
            return ps.executeUpdate() > 0;
          }
        });
  }

  @Override
  public long purgeDeadLetters(String queue) {
    ensureOpen();
    checkQueue(queue);
    return exec.write(
        "purgeDeadLetters",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.deleteDeadLetters)) {
            ps.setString(1, queue);
            return (long) ps.executeUpdate();
          }
        });
  }

  /** Reads id, dedup_key, payload, attempts, enqueued_ms, dead_ms, reason. */
  private static DeadLetter deadLetterAt(ResultSet rs, String queue) throws SQLException {
    return new DeadLetter(
        rs.getLong(1),
        queue,
        DedupKey.ofDigest(rs.getBytes(2)),
        rs.getBytes(3),
        rs.getInt(4),
        rs.getLong(5),
        rs.getLong(6),
        rs.getString(7));
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    ensureOpen();
    checkQueue(queue);
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive, got " + limit);
    }
    return exec.read(
        "pending",
        c -> {
          List<PendingEntry> out = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement(sql.pendingOf)) {
            ps.setString(1, queue);
            ps.setInt(2, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                long enqueued = rs.getLong(5);
                long available = Math.max(rs.getLong(6), rs.getLong(7));
                out.add(
                    new PendingEntry(
                        rs.getLong(1),
                        queue,
                        DedupKey.ofDigest(rs.getBytes(2)),
                        rs.getBytes(3),
                        rs.getInt(4),
                        enqueued,
                        Math.max(available, enqueued),
                        rs.getString(8)));
              }
            }
          }
          return out;
        });
  }

  @Override
  public long depth(String queue) {
    ensureOpen();
    checkQueue(queue);
    return exec.read(
        "depth",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.depth)) {
            ps.setString(1, queue);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getLong(1);
            }
          }
        });
  }

  // ---- helpers ----------------------------------------------------------------------------------

  private @Nullable StoredEntry selectEntry(Connection c, String query, Scope scope, DedupKey key)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(query)) {
      ps.setString(1, scope.toString());
      ps.setBytes(2, key.toBytes());
      if (psql != null && psql.selectTakesKeyTwice && query.equals(psql.select)) {
        ps.setString(3, scope.toString());
        ps.setBytes(4, key.toBytes());
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? readEntry(rs, 1) : null;
      }
    }
  }

  /** Reads state, token, since, deadline, fingerprint, result from column {@code at} on. */
  private @Nullable StoredEntry readEntry(ResultSet rs, int at) throws SQLException {
    int state = rs.getInt(at);
    if (rs.wasNull()) {
      return null;
    }
    StoredEntry.State s =
        switch (state) {
          case Statements.IN_FLIGHT -> StoredEntry.State.IN_FLIGHT;
          case Statements.COMMITTED -> StoredEntry.State.COMMITTED;
          default ->
              throw new StoreException(
                  "table "
                      + sql.keys
                      + " in "
                      + description
                      + " holds state "
                      + state
                      + ", which Idem never writes (1 = in flight, 2 = committed)");
        };
    byte[] fingerprint = rs.getBytes(at + 4);
    return new StoredEntry(
        s,
        rs.getLong(at + 1),
        rs.getLong(at + 2),
        rs.getLong(at + 3),
        fingerprint == null ? null : Fingerprint.ofDigest(fingerprint),
        rs.getBytes(at + 5));
  }

  private static void setBytesOrNull(PreparedStatement ps, int i, byte @Nullable [] value)
      throws SQLException {
    if (value == null) {
      ps.setNull(i, Types.VARBINARY);
    } else {
      ps.setBytes(i, value);
    }
  }

  private static void checkQueue(String queue) {
    Objects.requireNonNull(queue, "queue");
    if (queue.isBlank() || queue.length() > MAX_QUEUE_LENGTH) {
      throw new IllegalArgumentException(
          "outbox queue name must be 1 to "
              + MAX_QUEUE_LENGTH
              + " characters, got '"
              + queue
              + "'");
    }
  }

  private static String truncate(String s) {
    return s.length() <= MAX_ERROR_LENGTH ? s : s.substring(0, MAX_ERROR_LENGTH);
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("the store " + description + " is closed");
    }
  }

  /** Retries made so far by this store's operations (deadlocks, serialization failures). */
  long retries() {
    return exec.retries();
  }

  // ---- builder ----------------------------------------------------------------------------------

  /**
   * Configures a {@link JdbcDedupStore}. Every setter checks its value at once and throws {@link
   * IdemConfigException} naming the setting; {@link #build()} connects, checks the database and
   * creates the tables if asked to.
   */
  public static final class Builder {
    private final @Nullable String jdbcUrl;
    private final @Nullable JdbcDialect urlDialect;
    private final @Nullable DataSource dataSource;
    private @Nullable String user;
    private @Nullable String password;
    private int poolSize = 10;
    private static final Duration DEFAULT_CONNECT_WAIT = Duration.ofSeconds(5);
    private @Nullable Duration connectionTimeout;
    private Duration timeout = JdbcTimeouts.DEFAULT_TIMEOUT;
    private final Map<String, String> dataSourceProperties = new LinkedHashMap<>();
    private String tablePrefix = "idem_";
    private boolean createSchema = true;
    private TimeSource timeSource = TimeSource.system();
    private DedupListener listener = DedupListener.NOOP;
    private Duration sweepInterval = Duration.ofMinutes(1);
    private int sweepBatchSize = 1000;
    private JdbcLayout layout = JdbcLayout.STANDARD;
    private int retries = 5;
    private @Nullable String instanceId;
    private boolean poolSettingsGiven;

    private Builder(
        @Nullable String jdbcUrl,
        @Nullable JdbcDialect urlDialect,
        @Nullable DataSource dataSource) {
      this.jdbcUrl = jdbcUrl;
      this.urlDialect = urlDialect;
      this.dataSource = dataSource;
    }

    /**
     * Sets the database user (for {@link #builder(String)}; a URL parameter works as well).
     *
     * @param user the user name
     * @return this builder
     */
    public Builder user(String user) {
      this.user = Objects.requireNonNull(user, "user");
      poolSettingsGiven = true;
      return this;
    }

    /**
     * Sets the database password (for {@link #builder(String)}). It is never printed.
     *
     * @param password the password
     * @return this builder
     */
    public Builder password(String password) {
      this.password = Objects.requireNonNull(password, "password");
      poolSettingsGiven = true;
      return this;
    }

    /**
     * Sets the most connections the store's pool opens (for {@link #builder(String)}). Default 10.
     *
     * @param poolSize 1 to 1000
     * @return this builder
     */
    public Builder poolSize(int poolSize) {
      if (poolSize < 1 || poolSize > 1000) {
        throw new IdemConfigException("poolSize must be 1 to 1000, got " + poolSize);
      }
      this.poolSize = poolSize;
      poolSettingsGiven = true;
      return this;
    }

    /**
     * Sets how long an operation waits for a free pooled connection, and a new connection for its
     * TCP connect and login, before it fails with {@link StoreUnavailableException} (for {@link
     * #builder(String)}). Default 5 seconds.
     *
     * @param timeout at least 250 ms
     * @return this builder
     */
    public Builder connectionTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "connectionTimeout");
      if (timeout.toMillis() < 250) {
        throw new IdemConfigException("connectionTimeout must be at least 250ms, got " + timeout);
      }
      this.connectionTimeout = timeout;
      poolSettingsGiven = true;
      return this;
    }

    /**
     * Sets the bound on every statement, so that a stalled database (a table held locked, a server
     * or network that stopped answering) is a {@link StoreUnavailableException} after about this
     * long instead of a hang. With {@link #builder(String)} it sets PostgreSQL's {@code
     * statement_timeout} and {@code lock_timeout}, MariaDB's {@code max_statement_time}, {@code
     * lock_wait_timeout} and {@code innodb_lock_wait_timeout} (whole seconds, rounded up) on each
     * new connection, and the driver's {@code socketTimeout} to one second more; on every pool,
     * each statement gets a JDBC query timeout one second longer (whole seconds), and lock-wait
     * retries stop once an operation has run this long. Default 2 seconds.
     *
     * @param timeout 100 ms to 1 hour
     * @return this builder
     */
    public Builder timeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.toMillis() < 100 || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IdemConfigException(
            "timeout must be 100ms to 1h, got "
                + timeout
                + " (e.g. timeout(Duration.ofSeconds(2))");
      }
      this.timeout = timeout;
      return this;
    }

    /**
     * Passes a property to the JDBC driver (for {@link #builder(String)}), e.g. {@code sslmode} or
     * {@code socketTimeout} (which then wins over the one {@link #timeout(Duration)} sets).
     *
     * @param name the driver's property name
     * @param value its value
     * @return this builder
     */
    public Builder dataSourceProperty(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      if (name.isBlank()) {
        throw new IdemConfigException("dataSourceProperty name must not be blank");
      }
      dataSourceProperties.put(name, value);
      poolSettingsGiven = true;
      return this;
    }

    /**
     * Sets the prefix of the store's table names: {@code <prefix>keys}, {@code <prefix>outbox},
     * {@code <prefix>dead_letters}, {@code <prefix>schema_version}. Stores with different prefixes
     * in one database are independent. Default {@code idem_}.
     *
     * @param prefix 1 to 40 characters of lower-case letters, digits and {@code _}, starting with a
     *     letter
     * @return this builder
     */
    public Builder tablePrefix(String prefix) {
      Objects.requireNonNull(prefix, "tablePrefix");
      if (!Statements.PREFIX.matcher(prefix).matches()) {
        throw new IdemConfigException(
            "tablePrefix '"
                + prefix
                + "' is not allowed: use 1 to 40 characters of lower-case letters, digits and '_',"
                + " starting with a letter (e.g. idem_)");
      }
      this.tablePrefix = prefix;
      return this;
    }

    /**
     * Sets this instance's identity among the processes sharing the tables, which lets a restarted
     * instance release the outbox claims of its previous life ({@link
     * JdbcDedupStore#releaseClaimsOfEarlierRuns}) instead of waiting for them to run out. Give each
     * instance a distinct id that stays the same across its restarts (e.g. a StatefulSet pod's
     * name): two live instances with the same id would release each other's claims, and entries
     * could then be delivered twice at once. Default none: claims are released by running out.
     *
     * @param instanceId 1 to 255 characters, not blank
     * @return this builder
     */
    public Builder instanceId(String instanceId) {
      Objects.requireNonNull(instanceId, "instanceId");
      if (instanceId.isBlank() || instanceId.length() > 255) {
        throw new IdemConfigException(
            "instanceId must be 1 to 255 characters and not blank, got '" + instanceId + "'");
      }
      this.instanceId = instanceId;
      return this;
    }

    /**
     * Sets whether {@link #build()} creates missing tables ({@code CREATE TABLE IF NOT EXISTS}).
     * With {@code false}, the tables must exist (see {@link JdbcDedupStore#schemaDdl}); either way
     * {@link #build()} checks their schema version. Default true.
     *
     * @param create whether to create the tables
     * @return this builder
     */
    public Builder createSchema(boolean create) {
      this.createSchema = create;
      return this;
    }

    /**
     * Sets how the keys are laid out (default {@link JdbcLayout#STANDARD}). {@link
     * JdbcLayout#PARTITIONED} is for PostgreSQL and MariaDB: committed keys are written once into
     * partitions by expiry day, which the sweeper drops whole. A table prefix holds one layout; a
     * store opened on the other layout's tables refuses them.
     *
     * @param layout the layout
     * @return this builder
     */
    public Builder layout(JdbcLayout layout) {
      this.layout = Objects.requireNonNull(layout, "layout");
      return this;
    }

    /**
     * Sets the clock the background sweeper reads. Requests carry their own time. Default the
     * system clock.
     *
     * @param timeSource the clock
     * @return this builder
     */
    public Builder timeSource(TimeSource timeSource) {
      this.timeSource = Objects.requireNonNull(timeSource, "timeSource");
      return this;
    }

    /**
     * Sets the listener that hears {@link DedupListener#onExpired} for each key the sweeper
     * removes. Decisions are reported by the {@code Deduplicator}, not here. Default none.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(DedupListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Sets how often the background sweeper deletes expired rows; {@link Duration#ZERO} turns it
     * off (call {@link JdbcDedupStore#sweepExpired} yourself, or not at all: expired rows read as
     * absent anyway). Default 1 minute.
     *
     * @param interval zero, or at least 1 ms
     * @return this builder
     */
    public Builder sweepInterval(Duration interval) {
      Objects.requireNonNull(interval, "sweepInterval");
      if (interval.isNegative() || (!interval.isZero() && interval.toMillis() < 1)) {
        throw new IdemConfigException(
            "sweepInterval must be zero (off) or at least 1ms, got " + interval);
      }
      this.sweepInterval = interval;
      return this;
    }

    /**
     * Sets how many rows one sweep (or clear) statement deletes at most, which bounds how long it
     * holds row locks. Default 1000.
     *
     * @param batchSize 1 to 100000
     * @return this builder
     */
    public Builder sweepBatchSize(int batchSize) {
      if (batchSize < 1 || batchSize > 100_000) {
        throw new IdemConfigException("sweepBatchSize must be 1 to 100000, got " + batchSize);
      }
      this.sweepBatchSize = batchSize;
      return this;
    }

    /**
     * Sets how many times an operation is retried after a serialization failure, deadlock or lock
     * wait timeout (the database rolled it back), with a jittered backoff of at most 50 ms. Default
     * 5.
     *
     * @param retries 0 to 100
     * @return this builder
     */
    public Builder retries(int retries) {
      if (retries < 0 || retries > 100) {
        throw new IdemConfigException("retries must be 0 to 100, got " + retries);
      }
      this.retries = retries;
      return this;
    }

    /**
     * Connects, checks the database version, creates the tables if asked to and checks them, and
     * starts the sweeper.
     *
     * @return the store
     * @throws IdemConfigException if the database or its driver is not supported or missing
     * @throws StoreUnavailableException if the database cannot be reached
     * @throws StoreException if the tables are missing or of a newer schema
     */
    public JdbcDedupStore build() {
      if (dataSource != null) {
        if (poolSettingsGiven) {
          throw new IdemConfigException(
              "user, password, poolSize, connectionTimeout and dataSourceProperty apply to"
                  + " builder(jdbcUrl) only: configure them on your DataSource");
        }
        return open(dataSource, null, "DataSource " + dataSource.getClass().getName());
      }
      String url = Objects.requireNonNull(jdbcUrl);
      JdbcDialect dialect = Objects.requireNonNull(urlDialect);
      if (layout == JdbcLayout.PARTITIONED && dialect == JdbcDialect.H2) {
        throw new IdemConfigException(
            "layout partitioned needs PostgreSQL or MariaDB; "
                + dialect.productName()
                + " stores use layout standard");
      }
      try {
        DriverManager.getDriver(url);
      } catch (SQLException e) {
        throw new IdemConfigException(
            "no JDBC driver for "
                + JdbcUrls.redact(url)
                + " on the class path: add "
                + dialect.driverArtifact());
      }
      HikariConfig hc = new HikariConfig();
      hc.setJdbcUrl(url);
      if (user != null) {
        hc.setUsername(user);
      }
      if (password != null) {
        hc.setPassword(password);
      }
      hc.setMaximumPoolSize(poolSize);
      Duration connectWait = connectionTimeout != null ? connectionTimeout : DEFAULT_CONNECT_WAIT;
      hc.setConnectionTimeout(connectWait.toMillis());
      // Hikari's validity check of an idle connection, bounded like any statement.
      hc.setValidationTimeout(Math.max(250, Math.min(timeout.toMillis(), connectWait.toMillis())));
      String sessionSql = JdbcTimeouts.sessionSql(dialect, timeout);
      if (sessionSql != null) {
        hc.setConnectionInitSql(sessionSql);
      }
      hc.setPoolName("idem-jdbc-" + tablePrefix);
      hc.setAutoCommit(true);
      if (dialect == JdbcDialect.MARIADB) {
        // No gap locks: the sweeper's range delete and the claim's locking read then lock only
        // the rows they touch, not the gaps where new keys and outbox entries go.
        hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
      }
      if (dialect == JdbcDialect.POSTGRESQL
          && !dataSourceProperties.containsKey("ApplicationName")) {
        hc.addDataSourceProperty("ApplicationName", "idem");
      }
      JdbcTimeouts.driverProperties(dialect, timeout, connectWait)
          .forEach(
              (name, value) -> {
                if (!dataSourceProperties.containsKey(name)) {
                  hc.addDataSourceProperty(name, value);
                }
              });
      dataSourceProperties.forEach(hc::addDataSourceProperty);
      HikariDataSource pool;
      try {
        pool = new HikariDataSource(hc);
      } catch (RuntimeException e) {
        throw connectFailure(JdbcUrls.redact(url) + " [" + tablePrefix + "*]", e);
      }
      try {
        return open(pool, pool, JdbcUrls.redact(url));
      } catch (RuntimeException e) {
        pool.close();
        throw e;
      }
    }

    private JdbcDedupStore open(
        DataSource ds, @Nullable HikariDataSource owned, String fallbackDescription) {
      String what = fallbackDescription + " [" + tablePrefix + "*]";
      try (Connection c = ds.getConnection()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        DatabaseMetaData md = c.getMetaData();
        JdbcDialect dialect = JdbcDialect.fromProductName(md.getDatabaseProductName());
        if (urlDialect != null && dialect != urlDialect) {
          throw new IdemConfigException(
              what
                  + " is a "
                  + md.getDatabaseProductName()
                  + " server, not "
                  + urlDialect.productName()
                  + ": use the "
                  + dialect.productName()
                  + " URL scheme");
        }
        int major = md.getDatabaseMajorVersion();
        int minor = md.getDatabaseMinorVersion();
        if (!dialect.supportsVersion(major, minor)) {
          throw new IdemConfigException(
              what
                  + " runs "
                  + dialect.productName()
                  + " "
                  + major
                  + "."
                  + minor
                  + "; the store needs "
                  + dialect.minimumVersion()
                  + " or newer");
        }
        String url = md.getURL() == null ? "" : md.getURL();
        String description =
            owned != null || url.isEmpty()
                ? what
                : JdbcUrls.redact(url) + " (" + fallbackDescription + ") [" + tablePrefix + "*]";
        Statements sql = new Statements(dialect, tablePrefix, layout);
        if (createSchema) {
          Schema.checkLayout(c, sql, description);
          Schema.create(c, dialect, sql);
        }
        Schema.verify(c, sql, description);
        boolean durable =
            !(dialect == JdbcDialect.H2 && url.toLowerCase(Locale.ROOT).startsWith("jdbc:h2:mem:"));
        return new JdbcDedupStore(dialect, sql, ds, owned, description, durable, this);
      } catch (SQLException e) {
        throw connectFailure(what, e);
      }
    }

    private static RuntimeException connectFailure(String what, Exception e) {
      SQLException cause = e instanceof SQLException s ? s : findSql(e);
      if (cause == null) {
        return new StoreUnavailableException(
            what, false, "could not open " + what + ": " + e.getMessage(), e);
      }
      if (SqlErrors.isUnavailable(cause)) {
        return new StoreUnavailableException(
            what,
            false,
            "could not connect to " + what + ": " + SqlErrors.describe(cause) + "; is it up?",
            e);
      }
      return new StoreException(
          "could not open "
              + what
              + ": "
              + SqlErrors.describe(cause)
              + "; check the user, password, database and its privileges",
          e);
    }

    private static @Nullable SQLException findSql(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof SQLException s) {
          return s;
        }
        if (t.getCause() == t) {
          break;
        }
      }
      return null;
    }
  }
}
