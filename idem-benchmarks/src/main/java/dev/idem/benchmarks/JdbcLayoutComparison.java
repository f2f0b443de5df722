package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.store.jdbc.JdbcLayout;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes per key and reserve+commit throughput of the JDBC store's two layouts on PostgreSQL or
 * MariaDB (chosen by the URL), side by side in one database the benchmark creates and drops: {@code
 * standard} (one row per key, the commit an {@code UPDATE}) and {@code partitioned} (in-flight
 * table, committed keys written once into day partitions). Both are filled with the same number of
 * new random keys through the store (reserve, then commit, 24 h fixed TTL), in alternating rounds
 * so that both see the same machine load; then the tables' sizes are read as written and after the
 * database's compaction: on PostgreSQL heap and indexes ({@code pg_relation_size}, {@code
 * pg_indexes_size}) as written, after {@code VACUUM} and after {@code VACUUM FULL}; on MariaDB
 * {@code data_length + index_length} of {@code information_schema.TABLES} after {@code ANALYZE
 * TABLE}, and the tablespace files' allocated size, as written and after {@code OPTIMIZE TABLE}.
 * Last, one {@code sweepExpired} with the clock three days on (every key expired) per layout,
 * timed: row-by-row deletes against dropped partitions.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.JdbcLayoutComparison \
 *     --url 'jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres' --keys 1000000 \
 *     --connections 16 --rounds 10
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.JdbcLayoutComparison \
 *     --url 'jdbc:mariadb://127.0.0.1:3306/test?user=root' --keys 1000000
 * </pre>
 *
 * {@code --batch 500} fills through the store's batch path instead ({@code reserveAll} of 500 new
 * keys, then {@code commitAll} of them, per worker and call), which writes the same rows in fewer
 * round trips: the way to reach 10M keys in minutes rather than hours. {@code --layouts
 * partitioned} fills (and sweeps) only the layouts named (the other's tables stay empty).
 *
 * <p>{@code --anchor true} adds the anchor to the same alternating rounds: the same number of keys,
 * each one bare {@code INSERT} of a random key in autocommit into a table of the standard layout's
 * shape ({@code anchor_keys}), on as many plain connections; the throughput of each layout is then
 * also printed as a ratio to it. {@code --keys 10000000} is the 10M-key run. {@code
 * --vacuum-every-round true} (PostgreSQL) runs {@code VACUUM} on the keys tables after every round,
 * outside the timed fills, as autovacuum would on a server that runs it (a server with {@code
 * autovacuum = off} otherwise never reclaims the dead rows during the fill). The URL names a
 * database to connect to first; the benchmark works in {@code --database} (default {@code
 * idem_layout_bench}) on the same server, dropped first if it exists, and at the end.
 */
public final class JdbcLayoutComparison {
  private static final Scope SCOPE = Scope.of("bench", "dedup");
  private static final Ttl TTL = new Ttl(Duration.ofHours(24).toMillis(), Expiry.FIXED);
  private static final long LEASE_MILLIS = 60_000;
  private static boolean mariadb;

  /** Also fill an anchor table with one bare INSERT per key, in the same rounds. */
  private static boolean anchor;

  /** PostgreSQL: VACUUM the keys tables after every round, as autovacuum would. */
  private static boolean vacuumRounds;

  /** Keys per reserveAll/commitAll call in the fills; 0: one reserve and one commit per key. */
  private static int batch;

  /** Which layouts to fill and measure. */
  private static List<JdbcLayout> layouts = List.of(JdbcLayout.STANDARD, JdbcLayout.PARTITIONED);

  private JdbcLayoutComparison() {}

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
    long keys = 1_000_000;
    int connections = 16;
    int rounds = 10;
    String db = "idem_layout_bench";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--url" -> url = args[++i];
        case "--keys" -> keys = Long.parseLong(args[++i]);
        case "--connections" -> connections = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--database" -> db = args[++i];
        case "--anchor" -> anchor = Boolean.parseBoolean(args[++i]);
        case "--vacuum-every-round" -> vacuumRounds = Boolean.parseBoolean(args[++i]);
        case "--batch" -> batch = Integer.parseInt(args[++i]);
        case "--layouts" ->
            layouts =
                java.util.Arrays.stream(args[++i].split(","))
                    .map(n -> JdbcLayout.valueOf(n.trim().toUpperCase(Locale.ROOT)))
                    .toList();
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (!db.matches("[a-z][a-z0-9_]{0,40}")) {
      throw new IllegalArgumentException("--database: lower-case letters, digits and _ only");
    }
    mariadb = url.startsWith("jdbc:mariadb:");
    System.out.printf(Locale.ROOT, "%s, load average %s", url, loadAverage());
    try (Connection admin = DriverManager.getConnection(url);
        Statement st = admin.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + db);
      st.execute("CREATE DATABASE " + db);
    }
    String benchUrl = url.replaceFirst("/[^/?]*(\\?|$)", "/" + db + "$1");
    try {
      run(benchUrl, keys, connections, rounds);
    } finally {
      try (Connection admin = DriverManager.getConnection(url);
          Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + db + (mariadb ? "" : " WITH (FORCE)"));
      }
    }
    System.out.printf(Locale.ROOT, "load average at the end %s", loadAverage());
  }

  private static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"));
    } catch (java.io.IOException e) {
      return "unknown\n";
    }
  }

  private static void run(String url, long keys, int connections, int rounds) throws Exception {
    JdbcLayout[] layouts = {JdbcLayout.STANDARD, JdbcLayout.PARTITIONED};
    JdbcDedupStore[] stores = new JdbcDedupStore[2];
    for (int l = 0; l < 2; l++) {
      stores[l] =
          JdbcDedupStore.builder(url)
              .tablePrefix(prefix(layouts[l]))
              .layout(layouts[l])
              .poolSize(connections)
              .sweepInterval(Duration.ZERO)
              // a batch of 500 keys on a loaded machine with 8M rows once took over 30 s
              .timeout(Duration.ofMinutes(2))
              .build();
    }
    long[] nanos = new long[2];
    long anchorNanos = 0;
    if (anchor) {
      JdbcDedupStore.builder(url)
          .tablePrefix("anchor_")
          .sweepInterval(Duration.ZERO)
          .build()
          .close();
    }
    for (int l = 0; l < 2; l++) {
      // One key first, alone: its commit creates the day partition the fill writes into. Partition
      // DDL waits at most 1 s for its lock, which concurrent batches of 500 keys on a loaded
      // machine can hold for longer (the store's sweeper, off here, creates it a day ahead).
      if (JdbcLayoutComparison.layouts.contains(layouts[l])) {
        fill(stores[l], 1, 1);
      }
    }
    long perRound = keys / rounds;
    System.out.printf(
        Locale.ROOT,
        "filling %,d new keys per layout (%s) through the store, %d connections, %d rounds, %s%n",
        perRound * rounds,
        JdbcLayoutComparison.layouts,
        connections,
        rounds,
        batch > 0 ? "reserveAll + commitAll of " + batch + " keys" : "reserve + commit per key");
    for (int round = 0; round < rounds; round++) {
      for (int k = 0; k < 2; k++) {
        int l = (round + k) % 2; // alternate which layout goes first
        if (!JdbcLayoutComparison.layouts.contains(layouts[l])) {
          continue; // its tables stay empty
        }
        long t0 = System.nanoTime();
        if (batch > 0) {
          fillBatched(stores[l], perRound, connections, batch);
        } else {
          fill(stores[l], perRound, connections);
        }
        nanos[l] += System.nanoTime() - t0;
      }
      if (anchor) {
        long t0 = System.nanoTime();
        fillAnchor(url, perRound, connections);
        anchorNanos += System.nanoTime() - t0;
      }
      if (vacuumRounds && !mariadb) {
        try (Connection c = DriverManager.getConnection(url);
            Statement st = c.createStatement()) {
          for (String t : new String[] {"std_keys", "part_keys", "part_keys_inflight"}) {
            st.execute("VACUUM " + t);
          }
        }
      }
      System.out.printf(
          Locale.ROOT, "  round %d/%d done, load average %s", round + 1, rounds, loadAverage());
    }
    for (JdbcDedupStore s : stores) {
      s.close();
    }
    double[] rate = new double[2];
    for (int l = 0; l < 2; l++) {
      if (nanos[l] == 0) {
        continue;
      }
      rate[l] = perRound * rounds / (nanos[l] / 1e9);
      System.out.printf(Locale.ROOT, "%-12s reserve+commit: %,.0f keys/s%n", layouts[l], rate[l]);
    }
    if (rate[0] > 0 && rate[1] > 0) {
      System.out.printf(
          Locale.ROOT, "partitioned / standard throughput: %.2f%n", rate[1] / rate[0]);
    }
    if (anchor) {
      double a = perRound * rounds / (anchorNanos / 1e9);
      System.out.printf(
          Locale.ROOT,
          "anchor (one INSERT per key): %,.0f keys/s; standard / anchor %.2f, partitioned / anchor"
              + " %.2f%n",
          a,
          rate[0] / a,
          rate[1] / a);
    }
    if (mariadb) {
      try (Connection c = DriverManager.getConnection(url);
          Statement st = c.createStatement()) {
        reportMariaDb(st, "as written");
        for (String t : new String[] {"std_keys", "part_keys", "part_keys_inflight"}) {
          drain(st, "OPTIMIZE TABLE " + t);
        }
        reportMariaDb(st, "after OPTIMIZE TABLE");
      }
    } else {
      compactPostgres(url);
    }
    sweep(url, layouts);
  }

  private static void compactPostgres(String url) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement()) {
      report(st, "as written");
      st.execute("VACUUM " + prefix(JdbcLayout.STANDARD) + "keys");
      st.execute("VACUUM " + prefix(JdbcLayout.PARTITIONED) + "keys");
      st.execute("VACUUM " + prefix(JdbcLayout.PARTITIONED) + "keys_inflight");
      report(st, "after VACUUM");
      st.execute("VACUUM FULL " + prefix(JdbcLayout.STANDARD) + "keys");
      for (String part : partitions(st)) {
        st.execute("VACUUM FULL " + part);
      }
      st.execute("VACUUM FULL " + prefix(JdbcLayout.PARTITIONED) + "keys_inflight");
      report(st, "after VACUUM FULL");
    }
  }

  private static void sweep(String url, JdbcLayout[] layouts) {
    // The sweep's cost: every key expired (the clock 3 days on), one sweepExpired per layout.
    long later = System.currentTimeMillis() + Duration.ofDays(3).toMillis();
    for (int l = 0; l < 2; l++) {
      if (!JdbcLayoutComparison.layouts.contains(layouts[l])) {
        continue;
      }
      try (JdbcDedupStore s =
          JdbcDedupStore.builder(url)
              .tablePrefix(prefix(layouts[l]))
              .layout(layouts[l])
              .poolSize(2)
              .sweepInterval(Duration.ZERO)
              .timeout(Duration.ofMinutes(10))
              .build()) {
        long t0 = System.nanoTime();
        long removed = s.sweepExpired(later);
        System.out.printf(
            Locale.ROOT,
            "%-12s sweepExpired of every key: %,d removed in %,.0f ms%n",
            layouts[l],
            removed,
            (System.nanoTime() - t0) / 1e6);
      }
    }
  }

  /** Runs a statement that answers with a result (OPTIMIZE, ANALYZE) and reads it all. */
  private static void drain(Statement st, String sql) throws SQLException {
    if (st.execute(sql)) {
      try (ResultSet rs = st.getResultSet()) {
        while (rs.next()) {
          // the status rows ("Table does not support optimize, doing recreate + analyze")
        }
      }
    }
  }

  private static void reportMariaDb(Statement st, String when) throws SQLException {
    for (String t : new String[] {"std_keys", "part_keys", "part_keys_inflight"}) {
      drain(st, "ANALYZE TABLE " + t);
    }
    System.out.println(when + ":");
    long stdRows = count(st, "SELECT count(*) FROM std_keys");
    long partRows = count(st, "SELECT count(*) FROM part_keys");
    long[] std = mariaDbSize(st, "std_keys");
    long[] part = mariaDbSize(st, "part_keys");
    long[] inflight = mariaDbSize(st, "part_keys_inflight");
    if (stdRows > 0) { // not with --layouts partitioned
      System.out.printf(
          Locale.ROOT,
          "  %-12s %,d keys: %.1f B/key (data %.1f + indexes %.1f); files %.1f B/key%n",
          "standard",
          stdRows,
          (std[0] + std[1]) / (double) stdRows,
          std[0] / (double) stdRows,
          std[1] / (double) stdRows,
          std[2] / (double) stdRows);
    }
    if (partRows == 0) { // not with --layouts standard
      return;
    }
    System.out.printf(
        Locale.ROOT,
        "  %-12s %,d keys: %.1f B/key (data %.1f + indexes %.1f); files %.1f B/key%n",
        "partitioned",
        partRows,
        (part[0] + part[1] + inflight[0] + inflight[1]) / (double) partRows,
        (part[0] + inflight[0]) / (double) partRows,
        (part[1] + inflight[1]) / (double) partRows,
        (part[2] + inflight[2]) / (double) partRows);
    System.out.printf(
        Locale.ROOT,
        "    of which the committed partitions: %.1f B/key (data %.1f + indexes %.1f),"
            + " files %.1f B/key; the in-flight table the rest (%d partitions)%n",
        (part[0] + part[1]) / (double) partRows,
        part[0] / (double) partRows,
        part[1] / (double) partRows,
        part[2] / (double) partRows,
        count(
            st,
            "SELECT count(*) FROM information_schema.PARTITIONS WHERE table_schema = DATABASE()"
                + " AND table_name = 'part_keys'"));
  }

  /** data_length, index_length and the tablespace files' allocated size of one table. */
  private static long[] mariaDbSize(Statement st, String table) throws SQLException {
    long[] out = new long[3];
    try (ResultSet rs =
        st.executeQuery(
            "SELECT data_length, index_length FROM information_schema.TABLES"
                + " WHERE table_schema = DATABASE() AND table_name = '"
                + table
                + "'")) {
      rs.next();
      out[0] = rs.getLong(1);
      out[1] = rs.getLong(2);
    }
    try (ResultSet rs =
        st.executeQuery(
            "SELECT coalesce(sum(allocated_size), 0) FROM information_schema.INNODB_SYS_TABLESPACES"
                + " WHERE name = concat(DATABASE(), '/"
                + table
                + "') OR name LIKE concat(DATABASE(), '/"
                + table
                + "#P#%')")) {
      rs.next();
      out[2] = rs.getLong(1);
    }
    return out;
  }

  private static long count(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String prefix(JdbcLayout layout) {
    return layout == JdbcLayout.STANDARD ? "std_" : "part_";
  }

  private static List<String> partitions(Statement st) throws SQLException {
    List<String> out = new ArrayList<>();
    try (ResultSet rs =
        st.executeQuery(
            "SELECT inhrelid::regclass::text FROM pg_inherits"
                + " WHERE inhparent = 'part_keys'::regclass")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  private static void report(Statement st, String when) throws SQLException {
    String std =
        "SELECT count(*), pg_relation_size('std_keys'), pg_indexes_size('std_keys'),"
            + " (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'std_keys')"
            + " FROM std_keys";
    String part =
        "SELECT (SELECT count(*) FROM part_keys),"
            + " (SELECT coalesce(sum(pg_relation_size(inhrelid)), 0) FROM pg_inherits"
            + "   WHERE inhparent = 'part_keys'::regclass) + pg_relation_size('part_keys_inflight'),"
            + " (SELECT coalesce(sum(pg_indexes_size(inhrelid)), 0) FROM pg_inherits"
            + "   WHERE inhparent = 'part_keys'::regclass) + pg_indexes_size('part_keys_inflight'),"
            + " (SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables"
            + "   WHERE relname LIKE 'part_keys%'),"
            + " (SELECT coalesce(sum(pg_relation_size(inhrelid)), 0) FROM pg_inherits"
            + "   WHERE inhparent = 'part_keys'::regclass),"
            + " (SELECT coalesce(sum(pg_indexes_size(inhrelid)), 0) FROM pg_inherits"
            + "   WHERE inhparent = 'part_keys'::regclass)";
    System.out.println(when + ":");
    for (String[] q : new String[][] {{"standard", std}, {"partitioned", part}}) {
      try (ResultSet rs = st.executeQuery(q[1])) {
        rs.next();
        long rows = rs.getLong(1);
        long heap = rs.getLong(2);
        long index = rs.getLong(3);
        if (rows == 0) {
          continue; // a layout not filled in this run (--layouts)
        }
        System.out.printf(
            Locale.ROOT,
            "  %-12s %,d keys: %.1f B/key (heap %.1f + indexes %.1f), dead tuples %,d%n",
            q[0],
            rows,
            (heap + index) / (double) rows,
            heap / (double) rows,
            index / (double) rows,
            rs.getLong(4));
        if (q[0].equals("partitioned")) {
          System.out.printf(
              Locale.ROOT,
              "    of which the committed partitions: %.1f B/key (heap %.1f + hash index %.1f);"
                  + " the in-flight table the rest%n",
              (rs.getLong(5) + rs.getLong(6)) / (double) rows,
              rs.getLong(5) / (double) rows,
              rs.getLong(6) / (double) rows);
        }
      }
    }
  }

  /** The anchor: one INSERT of a new random key per autocommit transaction, per connection. */
  private static void fillAnchor(String url, long count, int threads) throws Exception {
    AtomicLong left = new AtomicLong(count);
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    String insert =
        "INSERT INTO anchor_keys (scope, dedup_key, state, token, since_ms, deadline_ms)"
            + " VALUES (?, ?, 2, ?, ?, ?)";
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                try (Connection c = DriverManager.getConnection(url);
                    java.sql.PreparedStatement ps = c.prepareStatement(insert)) {
                  byte[] key = new byte[32];
                  while (left.getAndDecrement() > 0) {
                    random.nextBytes(key);
                    long now = System.currentTimeMillis();
                    ps.setString(1, SCOPE.toString());
                    ps.setBytes(2, key);
                    ps.setLong(3, random.nextLong());
                    ps.setLong(4, now);
                    ps.setLong(5, now + TTL.millis());
                    ps.executeUpdate();
                  }
                } catch (Throwable e) {
                  failures.add(e);
                  left.set(0);
                }
              });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("an anchor worker failed", failures.get(0));
    }
  }

  /**
   * Fills through the store's batch path: each worker reserves {@code size} new random keys with
   * one {@code reserveAll} and commits them with one {@code commitAll}, the statements a batching
   * caller makes; the rows are the ones {@link #fill} writes.
   */
  private static void fillBatched(JdbcDedupStore store, long count, int threads, int size)
      throws Exception {
    AtomicLong left = new AtomicLong(count);
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                try {
                  while (true) {
                    long got = left.getAndAdd(-size);
                    if (got <= 0) {
                      break;
                    }
                    int n = (int) Math.min(size, got);
                    long now = System.currentTimeMillis();
                    List<ReserveRequest> reserves = new ArrayList<>(n);
                    List<CommitRequest> commits = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                      DedupKey key =
                          DedupKey.ofWords(
                              random.nextLong(),
                              random.nextLong(),
                              random.nextLong(),
                              random.nextLong());
                      long token = random.nextLong() | 1;
                      reserves.add(
                          new ReserveRequest(SCOPE, key, null, token, now, LEASE_MILLIS, TTL));
                      commits.add(new CommitRequest(SCOPE, key, token, now, TTL, null));
                    }
                    for (ReserveResult r : store.reserveAll(reserves)) {
                      if (!(r instanceof ReserveResult.Acquired)) {
                        throw new IllegalStateException("a new random key answered " + r);
                      }
                    }
                    for (SettleResult s : store.commitAll(commits)) {
                      if (s != SettleResult.APPLIED) {
                        throw new IllegalStateException("commit answered " + s);
                      }
                    }
                  }
                } catch (Throwable e) {
                  failures.add(e);
                  left.set(0);
                }
              });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a worker failed", failures.get(0));
    }
  }

  private static void fill(JdbcDedupStore store, long count, int threads) throws Exception {
    AtomicLong left = new AtomicLong(count);
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                try {
                  while (left.getAndDecrement() > 0) {
                    DedupKey key =
                        DedupKey.ofWords(
                            random.nextLong(),
                            random.nextLong(),
                            random.nextLong(),
                            random.nextLong());
                    long token = random.nextLong() | 1;
                    long now = System.currentTimeMillis();
                    ReserveResult r =
                        store.reserve(
                            new ReserveRequest(SCOPE, key, null, token, now, LEASE_MILLIS, TTL));
                    if (!(r instanceof ReserveResult.Acquired)) {
                      throw new IllegalStateException("a new random key answered " + r);
                    }
                    SettleResult s =
                        store.commit(new CommitRequest(SCOPE, key, token, now, TTL, null));
                    if (s != SettleResult.APPLIED) {
                      throw new IllegalStateException("commit answered " + s);
                    }
                  }
                } catch (Throwable e) {
                  failures.add(e);
                  left.set(0);
                }
              });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a worker failed", failures.get(0));
    }
  }
}
