package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.store.redis.RedisDedupStoreConfig.Layout;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * The Redis store's two layouts side by side on one private redis-server (started here on a free
 * loopback port with its default settings, killed at the end): bytes per committed key (the {@code
 * used_memory} delta after {@code MEMORY PURGE}, divided by the keys) and reserve+commit throughput
 * of new keys, alternating standard and compact (A B A B). Both layouts are filled side by side on
 * the one server (prefixes {@code idem-s:} and {@code idem-c:}); the throughput runs on top of the
 * full windows, with the caller's clock at the end of the window (the compact layout's shard hashes
 * as full as in a steady state).
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.RedisLayoutComparison \
 *     [--keys 1000000] [--shards keys/25] [--fingerprint false] [--window-hours 24] \
 *     [--seconds 5] [--rounds 2] [--concurrency 16]
 * </pre>
 *
 * <p>The memory phase fills a 24 h sliding window as a steady state would: the caller's clock moves
 * evenly through one window while the keys are committed (in batches of 1000). With a window about
 * as long as the keys take at the measured rate ({@code --window-hours 0.0025}: 9 s for 200,000
 * keys) the throughput rounds also pay for reclaiming as in a steady state: the filled keys die
 * during the rounds, Redis expires the standard layout's, the compact layout's sweeps remove its.
 * {@code --keys 10000000} is the 10M run (about 4 GB of Redis for the standard layout). No
 * fingerprint by default (drop mode); {@code --fingerprint true} is idempotency-key mode (32 bytes
 * more per key in both layouts).
 */
public final class RedisLayoutComparison {
  private static final Scope SCOPE = Scope.of("bench", "dedup");
  private static final long LEASE = 30_000;
  private static final int BATCH = 1000;

  private RedisLayoutComparison() {}

  /**
   * Runs the comparison.
   *
   * @param args see the class comment
   * @throws Exception if a step fails
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> opts = parse(args);
    long keys = Long.parseLong(opts.getOrDefault("keys", "1000000"));
    int shards =
        Integer.parseInt(opts.getOrDefault("shards", Long.toString(Math.max(1, (keys + 24) / 25))));
    boolean withFingerprint = Boolean.parseBoolean(opts.getOrDefault("fingerprint", "false"));
    long window = (long) (Double.parseDouble(opts.getOrDefault("window-hours", "24")) * 3_600_000);
    double seconds = Double.parseDouble(opts.getOrDefault("seconds", "5"));
    int rounds = Integer.parseInt(opts.getOrDefault("rounds", "2"));
    int concurrency = Integer.parseInt(opts.getOrDefault("concurrency", "16"));
    Fingerprint fp = withFingerprint ? Fingerprint.sha256(new byte[] {42}) : null;
    Ttl ttl = new Ttl(window, Expiry.SLIDING);

    System.out.printf(
        "keys=%d shards=%d fingerprint=%s window=%dms loadavg=%s%n",
        keys, shards, withFingerprint, window, loadavg());
    try (PrivateRedis redis = PrivateRedis.start()) {
      System.out.println("redis " + redis.version() + " on port " + redis.port);
      redis.flush();
      long t0 = System.currentTimeMillis();
      // Both layouts side by side on one server, each filled with one full window of keys.
      for (Layout layout : List.of(Layout.STANDARD, Layout.COMPACT)) {
        long before = redis.usedMemory();
        long keysBefore = redis.dbsize();
        long start = System.nanoTime();
        try (RedisDedupStore store = open(redis, layout, shards)) {
          fill(store, keys, fp, ttl, window, t0);
        }
        double fillSeconds = (System.nanoTime() - start) / 1e9;
        long after = redis.usedMemory();
        System.out.printf(
            "memory layout=%s keys=%d used_memory_delta=%d bytes_per_key=%.1f redis_keys=%d"
                + " fill_seconds=%.1f fill_keys_per_sec=%.0f%s loadavg=%s%n",
            name(layout),
            keys,
            after - before,
            (after - before) / (double) keys,
            redis.dbsize() - keysBefore,
            fillSeconds,
            keys / fillSeconds,
            layout == Layout.COMPACT ? " " + redis.hashStats() : "",
            loadavg());
      }
      // Then new keys on top of the full windows, at the end of the window, A B A B.
      long offset = t0 + window - System.currentTimeMillis();
      for (int round = 1; round <= rounds; round++) {
        Map<Layout, Double> rates = new HashMap<>();
        Map<Layout, String> server = new HashMap<>();
        for (Layout layout : List.of(Layout.STANDARD, Layout.COMPACT)) {
          try (RedisDedupStore store = open(redis, layout, shards)) {
            newKeys(store, fp, ttl, concurrency, Math.min(2, seconds), offset); // warm-up
            redis.resetStats();
            long start = System.nanoTime();
            long ops = newKeys(store, fp, ttl, concurrency, seconds, offset);
            rates.put(layout, ops / ((System.nanoTime() - start) / 1e9));
            server.put(layout, redis.serverMicrosPerKey(ops));
          }
        }
        System.out.printf(
            "throughput round=%d concurrency=%d standard_ops_per_sec=%.0f"
                + " compact_ops_per_sec=%.0f ratio=%.2f standard_server=%s compact_server=%s"
                + " loadavg=%s%n",
            round,
            concurrency,
            rates.get(Layout.STANDARD),
            rates.get(Layout.COMPACT),
            rates.get(Layout.COMPACT) / rates.get(Layout.STANDARD),
            server.get(Layout.STANDARD),
            server.get(Layout.COMPACT),
            loadavg());
      }
    }
  }

  private static String name(Layout layout) {
    return layout.name().toLowerCase(java.util.Locale.ROOT);
  }

  private static RedisDedupStore open(PrivateRedis redis, Layout layout, int shards) {
    return RedisDedupStore.builder("redis://127.0.0.1:" + redis.port)
        .prefix(layout == Layout.COMPACT ? "idem-c:" : "idem-s:")
        .layout(layout)
        .compactShards(shards)
        .commandTimeout(java.time.Duration.ofSeconds(60))
        .build();
  }

  /** Commits {@code keys} new keys while the clock moves evenly through one window. */
  private static void fill(
      RedisDedupStore store, long keys, Fingerprint fp, Ttl ttl, long window, long t0) {
    SplittableRandom random = new SplittableRandom(42);
    for (long from = 0; from < keys; from += BATCH) {
      int n = (int) Math.min(BATCH, keys - from);
      long now = t0 + (long) (window * (from / (double) keys));
      List<ReserveRequest> reserves = new ArrayList<>(n);
      List<CommitRequest> commits = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        DedupKey k =
            DedupKey.ofWords(
                random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong());
        long token = from + i + 1;
        reserves.add(new ReserveRequest(SCOPE, k, fp, token, now, LEASE, ttl));
        commits.add(new CommitRequest(SCOPE, k, token, now, ttl, null));
      }
      for (ReserveResult r : store.reserveAll(reserves)) {
        if (!(r instanceof ReserveResult.Acquired)) {
          throw new IllegalStateException("expected a new key, got " + r);
        }
      }
      for (SettleResult r : store.commitAll(commits)) {
        if (r != SettleResult.APPLIED) {
          throw new IllegalStateException("expected the commit to apply, got " + r);
        }
      }
    }
  }

  /** Reserve then commit of new keys, {@code callers} chains outstanding; returns keys done. */
  private static long newKeys(
      RedisDedupStore store, Fingerprint fp, Ttl ttl, int callers, double seconds, long offset)
      throws InterruptedException {
    AtomicLong ops = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(callers);
    for (int c = 0; c < callers; c++) {
      next(store, fp, ttl, offset, ops, stop, failure, done);
    }
    done.await((long) (seconds * 1000), TimeUnit.MILLISECONDS);
    stop.set(true);
    done.await(60, TimeUnit.SECONDS);
    if (failure.get() != null) {
      throw new IllegalStateException("load failed", failure.get());
    }
    return ops.get();
  }

  private static void next(
      RedisDedupStore store,
      Fingerprint fp,
      Ttl ttl,
      long offset,
      AtomicLong ops,
      AtomicBoolean stop,
      AtomicReference<Throwable> failure,
      CountDownLatch done) {
    if (stop.get() || failure.get() != null) {
      done.countDown();
      return;
    }
    ThreadLocalRandom r = ThreadLocalRandom.current();
    DedupKey key = DedupKey.ofWords(r.nextLong(), r.nextLong(), r.nextLong(), r.nextLong());
    long token = r.nextLong() | 1;
    long now = System.currentTimeMillis() + offset;
    CompletableFuture<SettleResult> one =
        store
            .reserveAsync(new ReserveRequest(SCOPE, key, fp, token, now, LEASE, ttl))
            .thenCompose(
                a -> {
                  if (!(a instanceof ReserveResult.Acquired)) {
                    throw new IllegalStateException("expected a new key, got " + a);
                  }
                  return store.commitAsync(new CommitRequest(SCOPE, key, token, now, ttl, null));
                });
    one.whenComplete(
        (ok, error) -> {
          if (error != null) {
            failure.compareAndSet(null, error);
          } else if (!stop.get()) {
            ops.incrementAndGet();
          }
          next(store, fp, ttl, offset, ops, stop, failure, done);
        });
  }

  private static String loadavg() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim().split(" ")[0];
    } catch (IOException e) {
      return "?";
    }
  }

  private static Map<String, String> parse(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --name value pairs, got " + args[i]);
      }
      opts.put(args[i].substring(2), args[++i]);
    }
    return opts;
  }

  /** A throwaway redis-server on a free loopback port, with its default settings. */
  private static final class PrivateRedis implements AutoCloseable {
    final int port;
    private final Path dir;
    private final Process process;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> sync;

    private PrivateRedis(int port, Path dir, Process process) {
      this.port = port;
      this.dir = dir;
      this.process = process;
      this.client = RedisClient.create("redis://127.0.0.1:" + port);
      this.connection = client.connect();
      this.sync = connection.sync();
    }

    static PrivateRedis start() throws IOException, InterruptedException {
      int port;
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      Path dir = Files.createTempDirectory("idem-redis-layouts");
      Process p =
          new ProcessBuilder(
                  "redis-server",
                  "--port",
                  Integer.toString(port),
                  "--bind",
                  "127.0.0.1",
                  "--save",
                  "",
                  "--appendonly",
                  "no",
                  "--maxmemory-policy",
                  "noeviction",
                  "--dir",
                  dir.toString())
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("redis.log").toFile())
              .start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (true) {
        try (java.net.Socket probe = new java.net.Socket("127.0.0.1", port)) {
          break;
        } catch (IOException e) {
          if (System.nanoTime() > deadline || !p.isAlive()) {
            p.destroyForcibly();
            throw new IOException("redis-server did not start on port " + port + ": " + e, e);
          }
          Thread.sleep(50);
        }
      }
      return new PrivateRedis(port, dir, p);
    }

    String version() {
      return field(sync.info("server"), "redis_version");
    }

    void flush() throws InterruptedException {
      sync.flushall();
      purge();
    }

    long usedMemory() throws InterruptedException {
      purge();
      return Long.parseLong(field(sync.info("memory"), "used_memory"));
    }

    void resetStats() {
      sync.configResetstat();
    }

    /**
     * Redis's own time in scripts per key done (INFO commandstats: EVALSHA and EVAL usec), and the
     * commands the scripts ran (calls and microseconds per key), e.g. {@code
     * 49.3us/key,hget=7.5/20.1us}.
     */
    String serverMicrosPerKey(long keys) {
      double perKey = Math.max(1, keys);
      long micros = 0;
      StringBuilder inner = new StringBuilder();
      for (String line : sync.info("commandstats").split("\\r?\\n")) {
        java.util.regex.Matcher m =
            java.util.regex.Pattern.compile("^cmdstat_(\\w+):calls=(\\d+),usec=(\\d+),.*")
                .matcher(line);
        if (!m.matches()) {
          continue;
        }
        String command = m.group(1);
        long calls = Long.parseLong(m.group(2));
        long usec = Long.parseLong(m.group(3));
        if (command.equals("evalsha") || command.equals("eval")) {
          micros += usec;
        } else if (calls >= keys / 1000 && !command.equals("config") && !command.equals("info")) {
          inner.append(
              String.format(
                  java.util.Locale.ROOT,
                  ",%s=%.1f/%.1fus",
                  command,
                  calls / perKey,
                  usec / perKey));
        }
      }
      return String.format(java.util.Locale.ROOT, "%.1fus/key", micros / perKey) + inner;
    }

    long dbsize() {
      return sync.dbsize();
    }

    private void purge() throws InterruptedException {
      sync.dispatch(
          CommandType.MEMORY,
          new StatusOutput<>(StringCodec.UTF8),
          new CommandArgs<>(StringCodec.UTF8).add("PURGE"));
      Thread.sleep(200);
    }

    /** How many hashes there are, how many are listpack-encoded, and their sizes (fields). */
    String hashStats() {
      long hashes = 0;
      long listpack = 0;
      long fields = 0;
      long max = 0;
      ScanArgs args = new ScanArgs().limit(1000);
      ScanCursor cursor = ScanCursor.INITIAL;
      do {
        KeyScanCursor<String> page = sync.scan(cursor, args);
        for (String k : page.getKeys()) {
          if (!"hash".equals(sync.type(k))) {
            continue;
          }
          hashes++;
          if ("listpack".equals(sync.objectEncoding(k))) {
            listpack++;
          }
          long n = sync.hlen(k);
          fields += n;
          max = Math.max(max, n);
        }
        cursor = page;
      } while (!cursor.isFinished());
      return String.format(
          "hashes=%d listpack=%d fields_per_hash_avg=%.1f fields_per_hash_max=%d",
          hashes, listpack, hashes == 0 ? 0 : fields / (double) hashes, max);
    }

    private static String field(String info, String name) {
      for (String line : info.split("\r?\n")) {
        if (line.startsWith(name + ":")) {
          return line.substring(name.length() + 1).trim();
        }
      }
      throw new IllegalStateException("INFO has no " + name);
    }

    @Override
    public void close() throws IOException {
      connection.close();
      client.shutdown();
      process.destroy();
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }
}
