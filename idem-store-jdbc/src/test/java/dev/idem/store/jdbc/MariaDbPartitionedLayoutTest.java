package dev.idem.store.jdbc;

import static dev.idem.store.jdbc.TestDb.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
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
 * What the partitioned layout adds on MariaDB beyond the contract suite: where rows live (a commit
 * writes the committed row once into its day's partition and leaves no in-flight row), day
 * partitions added after the last one without gaps up to {@link PartitionedSql#CONTIGUOUS_DAYS}
 * ahead, dropped whole once their day is over, a sliding hit that moves a key to a later day, a
 * commit over a dead row a sweep already counted, one acquisition per key under concurrent reserves
 * and commits, and the refusal of the other layout's tables.
 */
class MariaDbPartitionedLayoutTest {
  private static final Scope SCOPE = Scope.of("orders");
  private static final long DAY = PartitionedSql.DAY_MILLIS;
  private static final long HOUR = 3_600_000;
  private static final long LEASE = 30_000;

  /** Noon of an epoch day, so that a TTL of a few hours stays in that day. */
  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.ofEpochMilli(20_000 * DAY + DAY / 2));

  private String url;
  private String prefix;
  private final List<JdbcDedupStore> opened = new ArrayList<>();

  @BeforeEach
  void pickStorage() {
    url = TestDb.MARIADB.url();
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

  private void commitNew(JdbcDedupStore store, DedupKey k, long token, Ttl ttl) {
    assertThat(store.reserve(reserve(k, token, ttl))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(store.commit(commit(k, token, ttl))).isEqualTo(SettleResult.APPLIED);
  }

  private long query(String sql) throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private long rowsIn(String partition) throws SQLException {
    return query("SELECT count(*) FROM " + prefix + "keys PARTITION (" + partition + ")");
  }

  /** The partitions of the committed keys, in order. */
  private List<String> partitions() throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = TestDb.connect(url);
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT partition_name FROM information_schema.PARTITIONS"
                    + " WHERE table_schema = DATABASE() AND table_name = ?"
                    + " ORDER BY partition_ordinal_position")) {
      ps.setString(1, prefix + "keys");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  private static String day(long offset) {
    return "d" + (20_000 + offset);
  }

  @Test
  void aCommitMovesTheKeyIntoItsDeadlineDaysPartitionOnce() throws SQLException {
    JdbcDedupStore store = open();
    Ttl threeHours = new Ttl(3 * HOUR, Expiry.FIXED);
    DedupKey k = key("a");

    assertThat(store.reserve(reserve(k, 1, threeHours))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isEqualTo(1);
    assertThat(store.commit(commit(k, 1, threeHours))).isEqualTo(SettleResult.APPLIED);

    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isZero();
    assertThat(partitions()).containsExactly("pnever", day(0));
    assertThat(rowsIn(day(0))).isEqualTo(1);
    assertThat(store.commit(commit(k, 1, threeHours)))
        .as("a repeated commit")
        .isEqualTo(SettleResult.APPLIED);
    assertThat(store.commit(commit(k, 9, threeHours)))
        .as("a stale one")
        .isEqualTo(SettleResult.STALE);
    assertThat(store.reserve(reserve(k, 2, threeHours)))
        .isInstanceOf(ReserveResult.Duplicate.class);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight"))
        .as("a duplicate's reserve leaves no in-flight row")
        .isZero();

    DedupKey forever = key("forever");
    commitNew(store, forever, 3, Ttl.NONE);
    assertThat(rowsIn("pnever")).isEqualTo(1);
    assertThat(partitions()).as("no TTL adds no day").containsExactly("pnever", day(0));
  }

  @Test
  void daysAreAddedWithoutGapsAndAFarDeadlineGetsOnePartitionForTheDaysBeforeIt()
      throws SQLException {
    JdbcDedupStore store = open();
    commitNew(store, key("today"), 1, new Ttl(3 * HOUR, Expiry.FIXED));
    commitNew(store, key("in three days"), 2, new Ttl(3 * DAY, Expiry.FIXED));
    assertThat(partitions()).containsExactly("pnever", day(0), day(1), day(2), day(3));

    int far = PartitionedSql.CONTIGUOUS_DAYS + 10;
    commitNew(store, key("far"), 3, new Ttl(far * DAY, Expiry.FIXED));
    List<String> parts = partitions();
    assertThat(parts).hasSize(1 + PartitionedSql.CONTIGUOUS_DAYS + 1);
    assertThat(parts.get(parts.size() - 2)).isEqualTo(day(PartitionedSql.CONTIGUOUS_DAYS - 1));
    assertThat(parts.get(parts.size() - 1)).isEqualTo(day(far));

    // a deadline in the gap goes into the far day's partition, which holds the days before it
    DedupKey gap = key("gap");
    commitNew(store, gap, 4, new Ttl((far - 5) * DAY, Expiry.FIXED));
    assertThat(rowsIn(day(far))).isEqualTo(2);
    assertThat(store.inspect(SCOPE, gap, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(partitions()).as("nothing added for it").hasSize(parts.size());

    // a second store on the same tables reads the partitions it finds and adds after the last
    // (beyond the contiguous days, only the day it needs)
    JdbcDedupStore other = open();
    commitNew(other, key("later still"), 5, new Ttl((far + 2) * DAY, Expiry.FIXED));
    assertThat(partitions()).endsWith(day(far), day(far + 2));
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
    DedupKey shortKey = key("short");
    DedupKey longKey = key("long");
    commitNew(store, shortKey, 1, new Ttl(3 * HOUR, Expiry.FIXED));
    commitNew(store, longKey, 2, new Ttl(3 * DAY, Expiry.FIXED));

    clock.advanceMillis(DAY / 2 - 1); // the last millisecond of day 0
    store.sweepExpired(now());
    assertThat(partitions()).as("day 0 is not over yet").contains(day(0));
    assertThat(heard).isEmpty();

    clock.advanceMillis(1);
    store.sweepExpired(now());
    assertThat(partitions()).doesNotContain(day(0)).contains("pnever", day(3));
    assertThat(heard).containsExactly(shortKey);
    assertThat(store.inspect(SCOPE, shortKey, now())).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(SCOPE, longKey, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(store.sweepExpired(now())).as("a second sweep").isZero();
    // the sweeper adds ahead of time the partition the longest TTL will need tomorrow
    assertThat(partitions()).contains(day(5));

    DedupKey next = key("next");
    commitNew(store, next, 3, new Ttl(3 * HOUR, Expiry.FIXED));
    assertThat(rowsIn(day(1))).isEqualTo(1);

    // every day partition over: the never partition stays, and the days ahead are added after it
    clock.advanceMillis(10 * DAY);
    store.sweepExpired(now());
    assertThat(partitions()).containsExactly("pnever", day(11), day(12), day(13), day(14), day(15));
    commitNew(store, key("much later"), 4, new Ttl(3 * HOUR, Expiry.FIXED));
    assertThat(rowsIn(day(11))).isEqualTo(1);
  }

  @Test
  void aSlidingHitMovesTheKeyToTheDayItsNewDeadlineFallsIn() throws SQLException {
    JdbcDedupStore store = open();
    Ttl sliding = new Ttl(10 * HOUR, Expiry.SLIDING); // noon + 10 h: day 0
    DedupKey k = key("slide");
    commitNew(store, k, 1, sliding);
    assertThat(rowsIn(day(0))).isEqualTo(1);

    clock.advanceMillis(6 * HOUR); // 18:00; the window now ends at 04:00 of day 1
    assertThat(store.reserve(reserve(k, 2, sliding))).isInstanceOf(ReserveResult.Duplicate.class);

    assertThat(rowsIn(day(0))).isZero();
    assertThat(rowsIn(day(1))).isEqualTo(1);
    KeyState state = store.inspect(SCOPE, k, now());
    assertThat(state).isInstanceOf(KeyState.Committed.class);
    assertThat(((KeyState.Committed) state).expiresAtMillis()).isEqualTo(now() + 10 * HOUR);
    clock.advanceMillis(8 * HOUR); // 02:00 of day 1: day 0 is over
    store.sweepExpired(now());
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aCommitReplacesADeadRowOfItsDayThatASweepAlreadyCounted() throws SQLException {
    JdbcDedupStore store = open();
    Ttl hour = new Ttl(HOUR, Expiry.FIXED);
    DedupKey k = key("again");
    commitNew(store, k, 1, hour);
    clock.advanceMillis(2 * HOUR);
    store.sweepExpired(now()); // counts the row as removed; its day is not over, so it stays
    assertThat(rowsIn(day(0))).isEqualTo(1);
    assertThat(store.forget(SCOPE, k)).as("already removed by the sweep").isFalse();

    commitNew(store, k, 2, hour);
    clock.advanceMillis(2 * HOUR);
    store.sweepExpired(now());
    commitNew(store, k, 3, hour); // the same day again, over a row below the sweep mark

    assertThat(
            query(
                "SELECT count(*) FROM "
                    + prefix
                    + "keys WHERE dedup_key = X'"
                    + java.util.HexFormat.of().formatHex(k.toBytes())
                    + "'"))
        .isEqualTo(1);
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(store.forget(SCOPE, k)).isTrue();
    assertThat(store.inspect(SCOPE, k, now())).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void concurrentReservesAndCommitsAcquireEachKeyOnce() throws Exception {
    JdbcDedupStore store = open();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
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

  /**
   * Concurrent batch commits of distinct keys take their row locks in one order and never deadlock,
   * so they need no retry: with {@code retries(0)} any deadlock would fail a batch. The commit used
   * to lock its in-flight rows with one statement and delete them with a second; under load the
   * second scan waited on other commits' rows while holding the first scan's locks, and about one
   * batch in ten deadlocked (four loaders of 500-key batches).
   */
  @Test
  void concurrentBatchCommitsOfDistinctKeysNeedNoRetry() throws Exception {
    JdbcDedupStore store = open(b -> b.retries(0));
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    int threads = 4;
    int batches = 60;
    int size = 500;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(
            pool.submit(
                () -> {
                  java.util.SplittableRandom random = new java.util.SplittableRandom();
                  for (int b = 0; b < batches; b++) {
                    List<ReserveRequest> reserves = new ArrayList<>(size);
                    List<CommitRequest> commits = new ArrayList<>(size);
                    for (int i = 0; i < size; i++) {
                      DedupKey k =
                          DedupKey.ofWords(
                              random.nextLong(),
                              random.nextLong(),
                              random.nextLong(),
                              random.nextLong());
                      long token = random.nextLong() | 1;
                      reserves.add(reserve(k, token, ttl));
                      commits.add(commit(k, token, ttl));
                    }
                    assertThat(store.reserveAll(reserves))
                        .allSatisfy(r -> assertThat(r).isInstanceOf(ReserveResult.Acquired.class));
                    assertThat(store.commitAll(commits)).containsOnly(SettleResult.APPLIED);
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
    assertThat(query("SELECT count(*) FROM " + prefix + "keys"))
        .isEqualTo((long) threads * batches * size);
    assertThat(query("SELECT count(*) FROM " + prefix + "keys_inflight")).isZero();
  }

  @Test
  void aPrefixHoldsOneLayout() throws SQLException {
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
      TestDb.dropTables(url, other);
    }
    List<String> ddl =
        JdbcDedupStore.schemaDdl(JdbcDialect.MARIADB, "idem_", JdbcLayout.PARTITIONED);
    assertThat(ddl).anySatisfy(s -> assertThat(s).contains("PARTITION BY RANGE (expiry_day)"));
    assertThat(ddl)
        .anySatisfy(s -> assertThat(s).contains("CREATE TABLE IF NOT EXISTS idem_outbox"));
  }
}
