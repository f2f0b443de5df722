package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The partitioned layout at size: {@code idem.jdbc.scale.keys} keys (20,000 in the default build,
 * 10,000,000 under {@code -Psoak}) loaded through the store's batch path ({@code reserveAll} and
 * {@code commitAll} from four threads) into a database of the test's own, dropped after. Even keys
 * have a 6 h TTL (their deadline falls in today's partition), odd keys 30 h (tomorrow's). Then: a
 * sample of loaded keys answers duplicate and new keys acquire, one by one and in one mixed {@code
 * reserveAll}; with the clock past today, one sweep drops today's partition, after which the
 * sampled even keys are gone (absent, and acquire again) while the odd ones and every row of
 * tomorrow's partition stay.
 */
abstract class AbstractPartitionedScaleTest {
  private static final Scope SCOPE = Scope.of("scale", "dedup");
  private static final long DAY = PartitionedSql.DAY_MILLIS;
  private static final Ttl SHORT = new Ttl(6 * 3_600_000L, Expiry.FIXED);
  private static final Ttl LONG = new Ttl(30 * 3_600_000L, Expiry.FIXED);
  private static final long LEASE = 60_000;
  private static final int BATCH = 500;
  private static final int THREADS = 4;
  private static final int SAMPLE = 500;

  /** Noon of an epoch day: today ends 12 h on, tomorrow's partition holds the 30 h deadlines. */
  private static final long TODAY = 20_000;

  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.ofEpochMilli(TODAY * DAY + DAY / 2));

  private final long keys = Long.getLong("idem.jdbc.scale.keys", 20_000);
  private final long seed = ThreadLocalRandom.current().nextLong();
  private String serverUrl;
  private String database;
  private String url;
  private JdbcDedupStore store;

  abstract TestDb db();

  /** Rows in the committed keys' partition of one epoch day. */
  abstract long rowsOfDay(Connection c, long day) throws SQLException;

  /** Whether the committed keys have a partition for one epoch day. */
  abstract boolean hasPartition(Connection c, long day) throws SQLException;

  @BeforeEach
  void createDatabase() throws SQLException {
    serverUrl = db().url();
    byte[] b = new byte[4];
    ThreadLocalRandom.current().nextBytes(b);
    database = "idem_scale_" + HexFormat.of().formatHex(b);
    try (Connection c = TestDb.connect(serverUrl);
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + database);
    }
    url = serverUrl.replaceFirst("/[^/?]*(\\?|$)", "/" + database + "$1");
    store =
        JdbcDedupStore.builder(url)
            .tablePrefix("scale_")
            .layout(JdbcLayout.PARTITIONED)
            .timeSource(clock)
            .sweepInterval(Duration.ZERO)
            .poolSize(THREADS + 2)
            .timeout(Duration.ofMinutes(2))
            .build();
  }

  @AfterEach
  void dropDatabase() throws SQLException {
    if (store != null) {
      store.close();
    }
    try (Connection c = TestDb.connect(serverUrl);
        Statement st = c.createStatement()) {
      st.execute(
          "DROP DATABASE IF EXISTS "
              + database
              + (db() == TestDb.POSTGRESQL ? " WITH (FORCE)" : ""));
    }
  }

  /** The i-th loaded key: words mixed from the run's seed, so that keys arrive in random order. */
  private DedupKey key(long i) {
    SplittableRandom r = new SplittableRandom(seed ^ (i * 0x9E3779B97F4A7C15L));
    return DedupKey.ofWords(r.nextLong(), r.nextLong(), r.nextLong(), r.nextLong());
  }

  private static Ttl ttlOf(long i) {
    return i % 2 == 0 ? SHORT : LONG;
  }

  private ReserveRequest reserve(DedupKey k, long token, Ttl ttl) {
    return new ReserveRequest(SCOPE, k, null, token, clock.wallMillis(), LEASE, ttl);
  }

  @Test
  void loadedKeysAnswerAndADaysPartitionLeavesWhole() throws Exception {
    load();
    try (Connection c = TestDb.connect(url)) {
      assertThat(rowsOfDay(c, TODAY) + rowsOfDay(c, TODAY + 1)).isEqualTo(keys);
      assertThat(rowsOfDay(c, TODAY)).isEqualTo((keys + 1) / 2);
      assertThat(count(c, "SELECT count(*) FROM scale_keys_inflight")).isZero();
    }

    SplittableRandom pick = new SplittableRandom(seed);
    long[] sample = pick.longs(0, keys).distinct().limit(Math.min(SAMPLE, keys)).toArray();
    for (long i : sample) {
      ReserveResult r = store.reserve(reserve(key(i), 7, ttlOf(i)));
      assertThat(r).as("loaded key %d", i).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(((ReserveResult.Duplicate) r).expiresAtMillis())
          .isEqualTo(ttlOf(i).expiresAt(TODAY * DAY + DAY / 2));
    }
    // One batch of loaded and new keys: each answers as alone.
    List<ReserveRequest> mixed = new ArrayList<>();
    for (int s = 0; s < 100; s++) {
      mixed.add(reserve(key(sample[s]), 8, SHORT));
      mixed.add(reserve(key(keys + s), 8, SHORT));
    }
    List<ReserveResult> answers = store.reserveAll(mixed);
    for (int s = 0; s < 100; s++) {
      assertThat(answers.get(2 * s)).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(answers.get(2 * s + 1)).isInstanceOf(ReserveResult.Acquired.class);
    }
    try (Connection c = TestDb.connect(url)) {
      assertThat(count(c, "SELECT count(*) FROM scale_keys_inflight")).isEqualTo(100);
    }

    clock.advanceMillis(DAY / 2 + 3_600_000); // 01:00 tomorrow: today's partition is over
    long removed = store.sweepExpired(clock.wallMillis());

    assertThat(removed).isPositive();
    try (Connection c = TestDb.connect(url)) {
      assertThat(hasPartition(c, TODAY)).isFalse();
      assertThat(hasPartition(c, TODAY + 1)).isTrue();
      assertThat(rowsOfDay(c, TODAY + 1)).isEqualTo(keys / 2);
    }
    long now = clock.wallMillis();
    for (long i : sample) {
      if (i % 2 == 0) {
        assertThat(store.inspect(SCOPE, key(i), now))
            .as("key %d", i)
            .isEqualTo(new KeyState.Absent());
        assertThat(store.reserve(reserve(key(i), 9, SHORT)))
            .isInstanceOf(ReserveResult.Acquired.class);
      } else {
        assertThat(store.inspect(SCOPE, key(i), now))
            .as("key %d", i)
            .isInstanceOf(KeyState.Committed.class);
        assertThat(store.reserve(reserve(key(i), 9, SHORT)))
            .isInstanceOf(ReserveResult.Duplicate.class);
      }
    }
  }

  /** Loads keys 0..n-1 through reserveAll and commitAll, {@link #BATCH} at a time per thread. */
  private void load() throws Exception {
    long now = clock.wallMillis();
    // The first batch alone: its commits create today's and tomorrow's partitions, DDL that waits
    // at most 1 s for its lock behind the other threads' batches (the sweeper, off here, would
    // create them ahead of time).
    loadBatch(0, Math.min(keys, BATCH), now);
    AtomicLong next = new AtomicLong(Math.min(keys, BATCH));
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        done.add(
            pool.submit(
                () -> {
                  for (long from = next.getAndAdd(BATCH);
                      from < keys;
                      from = next.getAndAdd(BATCH)) {
                    loadBatch(from, Math.min(keys, from + BATCH), now);
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
  }

  private void loadBatch(long from, long to, long now) {
    List<ReserveRequest> reserves = new ArrayList<>();
    List<CommitRequest> commits = new ArrayList<>();
    for (long i = from; i < to; i++) {
      long token = i + 1;
      reserves.add(new ReserveRequest(SCOPE, key(i), null, token, now, LEASE, ttlOf(i)));
      commits.add(new CommitRequest(SCOPE, key(i), token, now, ttlOf(i), null));
    }
    for (ReserveResult r : store.reserveAll(reserves)) {
      assertThat(r).isInstanceOf(ReserveResult.Acquired.class);
    }
    for (SettleResult s : store.commitAll(commits)) {
      assertThat(s).isEqualTo(SettleResult.APPLIED);
    }
  }

  static long count(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
