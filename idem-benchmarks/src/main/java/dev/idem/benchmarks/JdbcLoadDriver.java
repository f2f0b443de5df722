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
import dev.idem.store.jdbc.JdbcDialect;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * Load driver for the JDBC store: N threads, each on its own pooled connection, loop "reserve a new
 * random key, commit it" for a fixed time after a warmup, and the driver prints the rate of
 * completed reserve+commit pairs. Run by {@code idem-benchmarks/scripts/pg-bench.sh} next to
 * pgbench's rate of single-row INSERTs into a table of the same shape.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.JdbcLoadDriver \
 *     --url jdbc:postgresql://127.0.0.1:5432/idem_bench?user=postgres \
 *     --connections 16 --seconds 10 --warmup 3 [--prefix idem_]
 * java -cp ... dev.idem.benchmarks.JdbcLoadDriver --ddl --prefix pgb_   # the table DDL, for psql
 * </pre>
 */
public final class JdbcLoadDriver {
  private static final Scope SCOPE = Scope.of("bench");
  private static final Ttl TTL = new Ttl(Duration.ofHours(1).toMillis(), Expiry.SLIDING);
  private static final long LEASE_MILLIS = 60_000;

  private JdbcLoadDriver() {}

  public static void main(String[] args) throws Exception {
    String url = null;
    String prefix = "idem_";
    int connections = 1;
    int seconds = 10;
    int warmup = 3;
    boolean ddl = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--url" -> url = args[++i];
        case "--prefix" -> prefix = args[++i];
        case "--connections" -> connections = Integer.parseInt(args[++i]);
        case "--seconds" -> seconds = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Integer.parseInt(args[++i]);
        case "--ddl" -> ddl = true;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (ddl) {
      for (String statement : JdbcDedupStore.schemaDdl(JdbcDialect.POSTGRESQL, prefix)) {
        System.out.println(statement + ";");
      }
      return;
    }
    if (url == null) {
      throw new IllegalArgumentException("--url is required");
    }
    try (JdbcDedupStore store =
        JdbcDedupStore.builder(url)
            .tablePrefix(prefix)
            .poolSize(connections)
            .sweepInterval(Duration.ZERO)
            .build()) {
      run(store, connections, warmup, false);
      double opsPerSecond = run(store, connections, seconds, true);
      System.out.printf(
          Locale.ROOT,
          "idem reserve+commit connections=%d seconds=%d ops/s=%.0f%n",
          connections,
          seconds,
          opsPerSecond);
    }
  }

  /** Runs the loop on {@code threads} threads for {@code seconds}; returns pairs per second. */
  private static double run(JdbcDedupStore store, int threads, int seconds, boolean measure)
      throws InterruptedException {
    LongAdder done = new LongAdder();
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                ready.countDown();
                try {
                  go.await();
                  loop(store, stop, done);
                } catch (Throwable e) {
                  synchronized (failures) {
                    failures.add(e);
                  }
                  stop.set(true);
                }
              },
              "load-" + t);
      workers.add(w);
      w.start();
    }
    ready.await();
    long start = System.nanoTime();
    go.countDown();
    Thread.sleep(seconds * 1_000L);
    stop.set(true);
    long elapsed = System.nanoTime() - start;
    for (Thread w : workers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a load thread failed", failures.get(0));
    }
    return done.sum() * 1e9 / elapsed;
  }

  private static void loop(JdbcDedupStore store, AtomicBoolean stop, LongAdder done) {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    while (!stop.get()) {
      DedupKey key =
          DedupKey.ofWords(
              random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong());
      long token = random.nextLong() | 1;
      long now = System.currentTimeMillis();
      ReserveResult r =
          store.reserve(new ReserveRequest(SCOPE, key, null, token, now, LEASE_MILLIS, TTL));
      if (!(r instanceof ReserveResult.Acquired)) {
        throw new IllegalStateException("a new random key was not acquired: " + r);
      }
      SettleResult s = store.commit(new CommitRequest(SCOPE, key, token, now, TTL, null));
      if (s != SettleResult.APPLIED) {
        throw new IllegalStateException("commit of a fresh reservation was " + s);
      }
      done.increment();
    }
  }
}
