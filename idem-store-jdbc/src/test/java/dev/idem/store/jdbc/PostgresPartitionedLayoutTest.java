package dev.idem.store.jdbc;

import static dev.idem.store.jdbc.TestDb.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the partitioned layout adds on PostgreSQL beyond the contract suite: where rows live (a
 * commit writes the committed row once and leaves no in-flight row), day partitions created as
 * commits need them and dropped whole once their day is over, a sliding hit that moves a key to a
 * later day, the listener on dropped partitions, one acquisition per key under concurrent reserves
 * and commits, and the refusals (other layout's tables, H2).
 */
class PostgresPartitionedLayoutTest {
  private static final Scope SCOPE = Scope.of("orders");
  private static final long DAY = PartitionedSql.DAY_MILLIS;
  private static final long LEASE = 30_000;

  /** Noon of an epoch day, so that a TTL of a few hours stays in that day. */
  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.ofEpochMilli(20_000 * DAY + DAY / 2));

  private String url;
  private String prefix;
  private final List<JdbcDedupStore> opened = new ArrayList<>();

  @BeforeEach
  void pickStorage() {
    url = TestDb.POSTGRESQL.url();
    prefix = TestDb.uniquePrefix();
  }

  @AfterEach
  void dropStorage() throws SQLException {
    for (JdbcDedupStore s : opened) {
      s.close();
    }
    TestDb.dropTables(url, prefix);
  }

  private JdbcDedupStore open(UnaryOperator<JdbcDedupStore.Builder> tweak) {
    JdbcDedupStore s =
        tweak
            .apply(
                JdbcDedupStore.builder(url)
                    .tablePrefix(prefix)
                    .layout(JdbcLayout.PARTITIONED)
                    .timeSource(clock)
                    .sweepInterval(Duration.ZERO)
                    .poolSize(10))
            .build();
    opened.add(s);
    return s;
  }

  private JdbcDedupStore open() {
    return open(b -> b);
  }

  private long now() {
    return clock.wallMillis();
  }

  private ReserveRequest reserve(DedupKey k, long token, Ttl ttl) {
    return new ReserveRequest(SCOPE, k, null, token, now(), LEASE, ttl);
  }

  private CommitRequest commit(DedupKey k, long token, Ttl ttl) {
    return new CommitRequest(SCOPE, k, token, now(), ttl, null);
  }

  private long query(String sql) throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private List<String> partitions() throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = TestDb.connect(url);
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                    + " WHERE i.inhparent = to_regclass(?) ORDER BY 1")) {
      ps.setString(1, prefix + "keys");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  private String day(long offset) {
    return prefix + "keys_d" + (20_000 + offset);
  }

  @Test
  void aCommitMovesTheKeyIntoItsDeadlineDaysPartitionOnce() throws SQLException {
    JdbcDedupStore store = open();
    Ttl threeHours = new Ttl(3 * 3_600_000, Expiry.FIXED);
    DedupKey k = key("a");

    assertThat(store.reserve(reserve(k, 1, threeHours))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isEqualTo(1);
    assertThat(store.commit(commit(k, 1, threeHours))).isEqualTo(SettleResult.APPLIED);

    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isZero();
    assertThat(query("SELECT count(*) FROM " + day(0))).isEqualTo(1);
    assertThat(partitions()).containsExactly(day(0), prefix + "keys_never");
    // the committed row was inserted, never updated
    assertThat(query("SELECT count(*) FROM " + day(0) + " WHERE xmax = 0")).isEqualTo(1);
    assertThat(store.commit(commit(k, 1, threeHours)))
        .as("a repeated commit")
        .isEqualTo(SettleResult.APPLIED);
    assertThat(store.reserve(reserve(k, 2, threeHours)))
        .isInstanceOf(ReserveResult.Duplicate.class);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight"))
        .as("a duplicate's reserve leaves no in-flight row")
        .isZero();

    DedupKey forever = key("forever");
    store.reserve(reserve(forever, 3, Ttl.NONE));
    store.commit(commit(forever, 3, Ttl.NONE));
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_never")).isEqualTo(1);
  }

  /**
   * The first commit of a new day creates its partition, whose DDL waits at most {@link
   * Partitions#DDL_LOCK_TIMEOUT_MS} for the parent table's lock. A statement that holds the table
   * for longer than that (a large batch on a loaded machine) makes the DDL try again within the
   * store's timeout, and the commit goes through once the statement is done instead of failing with
   * "store unavailable".
   */
  @Test
  void aNewDaysCommitWaitsOutAStatementThatHoldsTheTableLongerThanOneLockWait() throws Exception {
    JdbcDedupStore store = open(b -> b.timeout(Duration.ofSeconds(20)));
    Ttl threeDays = new Ttl(3 * DAY, Expiry.FIXED);
    DedupKey k = key("late");
    assertThat(store.reserve(reserve(k, 1, threeDays))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(partitions()).doesNotContain(day(3));

    java.util.concurrent.ScheduledExecutorService later =
        Executors.newSingleThreadScheduledExecutor();
    try (Connection holder = TestDb.connect(url)) {
      holder.setAutoCommit(false);
      try (Statement st = holder.createStatement()) {
        st.execute("LOCK TABLE " + prefix + "keys IN ACCESS SHARE MODE");
      }
      // held through more than two of the DDL's lock waits
      later.schedule(
          () -> {
            holder.commit();
            return null;
          },
          Partitions.DDL_LOCK_TIMEOUT_MS * 5L / 2,
          java.util.concurrent.TimeUnit.MILLISECONDS);
      assertThat(store.commit(commit(k, 1, threeDays))).isEqualTo(SettleResult.APPLIED);
    } finally {
      later.shutdownNow();
    }
    assertThat(partitions()).contains(day(3));
    assertThat(query("SELECT count(*) FROM " + day(3))).isEqualTo(1);
  }

  @Test
  void theSweepDropsAPartitionOnceItsDayIsOverAndKeepsTheLiveOnes() throws SQLException {
    List<DedupKey> heard = new CopyOnWriteArrayList<>();
    DedupListener listener =
        new DedupListener() {
          @Override
          public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
            heard.add(key);
          }
        };
    JdbcDedupStore store = open(b -> b.listener(listener));
    Ttl hours = new Ttl(3 * 3_600_000, Expiry.FIXED);
    Ttl days = new Ttl(3 * DAY, Expiry.FIXED);
    DedupKey shortKey = key("short");
    DedupKey longKey = key("long");
    store.reserve(reserve(shortKey, 1, hours));
    store.commit(commit(shortKey, 1, hours));
    store.reserve(reserve(longKey, 2, days));
    store.commit(commit(longKey, 2, days));
    assertThat(partitions()).contains(day(0), day(3));

    clock.advanceMillis(DAY / 2 - 1); // the last millisecond of day 0
    store.sweepExpired(now());
    assertThat(partitions()).as("day 0 is not over yet").contains(day(0));

    clock.advanceMillis(1);
    store.sweepExpired(now());
    assertThat(partitions()).doesNotContain(day(0)).contains(day(3));
    assertThat(heard).containsExactly(shortKey);
    assertThat(store.inspect(SCOPE, shortKey, now())).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(SCOPE, longKey, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(store.sweepExpired(now())).as("a second sweep").isZero();
    // the sweeper creates ahead of time the partition the longest TTL will need tomorrow
    assertThat(partitions()).contains(day(5));

    // a commit into the dropped day's range cannot happen (deadlines are after now), and a new
    // key committed now goes where it belongs
    DedupKey next = key("next");
    store.reserve(reserve(next, 3, hours));
    assertThat(store.commit(commit(next, 3, hours))).isEqualTo(SettleResult.APPLIED);
    assertThat(query("SELECT count(*) FROM " + day(1))).isEqualTo(1);
  }

  @Test
  void aSlidingHitMovesTheKeyToTheDayItsNewDeadlineFallsIn() throws SQLException {
    JdbcDedupStore store = open();
    Ttl sliding = new Ttl(10 * 3_600_000, Expiry.SLIDING); // noon + 10 h: day 0
    DedupKey k = key("slide");
    store.reserve(reserve(k, 1, sliding));
    store.commit(commit(k, 1, sliding));
    assertThat(query("SELECT count(*) FROM " + day(0))).isEqualTo(1);

    clock.advanceMillis(6 * 3_600_000); // 18:00; the window now ends at 04:00 of day 1
    assertThat(store.reserve(reserve(k, 2, sliding))).isInstanceOf(ReserveResult.Duplicate.class);

    assertThat(query("SELECT count(*) FROM " + day(0))).isZero();
    assertThat(query("SELECT count(*) FROM " + day(1))).isEqualTo(1);
    KeyState state = store.inspect(SCOPE, k, now());
    assertThat(state).isInstanceOf(KeyState.Committed.class);
    assertThat(((KeyState.Committed) state).expiresAtMillis()).isEqualTo(now() + 10 * 3_600_000);
    clock.advanceMillis(8 * 3_600_000); // 02:00 of day 1: day 0 is over
    store.sweepExpired(now());
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void concurrentReservesAndCommitsAcquireEachKeyOnce() throws Exception {
    JdbcDedupStore store = open();
    Ttl ttl = new Ttl(3_600_000, Expiry.FIXED);
    int keys = 150;
    int threads = 8;
    ConcurrentHashMap<Integer, AtomicInteger> acquired = new ConcurrentHashMap<>();
    AtomicInteger token = new AtomicInteger(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int offset = t * 17;
        done.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < keys; i++) {
                    int n = (i + offset) % keys;
                    DedupKey k = key("k" + n);
                    long tok = token.getAndIncrement();
                    ReserveResult r = store.reserve(reserve(k, tok, ttl));
                    if (r instanceof ReserveResult.Acquired) {
                      acquired.computeIfAbsent(n, x -> new AtomicInteger()).incrementAndGet();
                      assertThat(store.commit(commit(k, tok, ttl))).isEqualTo(SettleResult.APPLIED);
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(acquired).hasSize(keys);
    assertThat(acquired.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    assertThat(query("SELECT count(*) FROM " + prefix + "keys")).isEqualTo(keys);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isZero();
  }

  @Test
  void aPrefixHoldsOneLayout() {
    open().close();
    assertThatThrownBy(
            () ->
                JdbcDedupStore.builder(url)
                    .tablePrefix(prefix)
                    .sweepInterval(Duration.ZERO)
                    .build())
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("was made by layout partitioned")
        .hasMessageContaining("uses layout standard");

    String other = TestDb.uniquePrefix();
    try {
      JdbcDedupStore.builder(url).tablePrefix(other).sweepInterval(Duration.ZERO).build().close();
      assertThatThrownBy(
              () ->
                  JdbcDedupStore.builder(url)
                      .tablePrefix(other)
                      .layout(JdbcLayout.PARTITIONED)
                      .sweepInterval(Duration.ZERO)
                      .build())
          .isInstanceOf(StoreException.class)
          .hasMessageContaining("was made by layout standard");
    } finally {
      try {
        TestDb.dropTables(url, other);
      } catch (SQLException e) {
        throw new AssertionError(e);
      }
    }
  }

  @Test
  void thePartitionedLayoutIsForPostgresqlAndMariaDbOnly() {
    assertThatThrownBy(
            () -> JdbcDedupStore.builder("jdbc:h2:mem:x").layout(JdbcLayout.PARTITIONED).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("layout partitioned needs PostgreSQL or MariaDB");
    assertThatThrownBy(
            () -> JdbcDedupStore.schemaDdl(JdbcDialect.H2, "idem_", JdbcLayout.PARTITIONED))
        .isInstanceOf(IdemConfigException.class);
    assertThat(JdbcLayout.fromName(" Partitioned ")).isEqualTo(JdbcLayout.PARTITIONED);
    assertThatThrownBy(() -> JdbcLayout.fromName("sharded"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("standard or partitioned");
    List<String> ddl =
        JdbcDedupStore.schemaDdl(JdbcDialect.POSTGRESQL, "idem_", JdbcLayout.PARTITIONED);
    assertThat(ddl).anySatisfy(s -> assertThat(s).contains("PARTITION BY RANGE (deadline_ms)"));
    assertThat(ddl).noneSatisfy(s -> assertThat(s).contains("idem_keys_deadline"));
    assertThat(ddl)
        .anySatisfy(s -> assertThat(s).contains("CREATE TABLE IF NOT EXISTS idem_outbox"));
  }
}
