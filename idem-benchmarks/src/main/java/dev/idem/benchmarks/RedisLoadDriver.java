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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Load driver for the Redis store, the Idem side of {@code scripts/redis-bench.sh} (redis-benchmark
 * is the anchor). It keeps N requests outstanding, as N callers would (redis-benchmark -c N), and
 * prints one line: {@code mode=.. concurrency=.. ops_per_sec=..}.
 *
 * <pre>
 * java -cp benchmarks.jar dev.idem.benchmarks.RedisLoadDriver --uri redis://127.0.0.1:PORT \
 *     --mode new|reserve|dup|batch --concurrency 16 [--batch 100] [--seconds 5] [--warmup 3]
 * java -cp benchmarks.jar dev.idem.benchmarks.RedisLoadDriver --print-script reserve
 * </pre>
 *
 * <ul>
 *   <li>{@code reserve}: reserve of a new key (the script redis-benchmark runs with EVALSHA).
 *   <li>{@code new}: reserve then commit of a new key; one op = one key.
 *   <li>{@code dup}: reserve of an already committed key (a duplicate hit, sliding TTL refresh).
 *   <li>{@code batch}: reserveAll then commitAll of {@code --batch} new keys per caller thread; one
 *       op = one key.
 * </ul>
 */
public final class RedisLoadDriver {
  private static final Scope SCOPE = Scope.of("bench", "dedup");
  private static final Ttl TTL = new Ttl(3_600_000, Expiry.SLIDING);
  private static final long LEASE = 60_000;
  private static final int DUP_KEYS = 10_000;

  /** Every request carries a payload fingerprint (idempotency-key mode), as the anchor's does. */
  private static final Fingerprint FP = Fingerprint.sha256(new byte[] {42});

  private RedisLoadDriver() {}

  /**
   * Runs one measurement.
   *
   * @param args see the class comment
   * @throws Exception if the run fails
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> opts = parse(args);
    if (opts.containsKey("print-script")) {
      System.out.print(RedisDedupStore.luaScripts().get(opts.get("print-script")));
      return;
    }
    String uri = opts.getOrDefault("uri", "redis://127.0.0.1:6379");
    String mode = opts.getOrDefault("mode", "new");
    int concurrency = Integer.parseInt(opts.getOrDefault("concurrency", "1"));
    int batch = Integer.parseInt(opts.getOrDefault("batch", "100"));
    double seconds = Double.parseDouble(opts.getOrDefault("seconds", "5"));
    double warmup = Double.parseDouble(opts.getOrDefault("warmup", "3"));
    String prefix = "bench:" + Long.toHexString(System.nanoTime()) + ":";

    try (RedisDedupStore store = RedisDedupStore.builder(uri).prefix(prefix).build()) {
      List<DedupKey> dupKeys = mode.equals("dup") ? populate(store) : List.of();
      Load load = new Load(store, mode, batch, dupKeys);
      load.run(concurrency, warmup); // warm-up: JIT, connection, Redis dict growth
      long start = System.nanoTime();
      long ops = load.run(concurrency, seconds);
      double elapsed = (System.nanoTime() - start) / 1e9;
      System.out.printf(
          "mode=%s concurrency=%d batch=%d ops=%d seconds=%.2f ops_per_sec=%.0f%n",
          mode, concurrency, mode.equals("batch") ? batch : 1, ops, elapsed, ops / elapsed);
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

  private static DedupKey randomKey() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return DedupKey.ofWords(r.nextLong(), r.nextLong(), r.nextLong(), r.nextLong());
  }

  private static long token() {
    long t = ThreadLocalRandom.current().nextLong();
    return t == 0 ? 1 : t;
  }

  /** Commits the keys that the {@code dup} mode hits. */
  private static List<DedupKey> populate(RedisDedupStore store) {
    List<DedupKey> keys = new ArrayList<>(DUP_KEYS);
    long now = System.currentTimeMillis();
    for (int from = 0; from < DUP_KEYS; from += 500) {
      List<ReserveRequest> reserves = new ArrayList<>();
      List<CommitRequest> commits = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        DedupKey k = randomKey();
        long t = token();
        keys.add(k);
        reserves.add(new ReserveRequest(SCOPE, k, FP, t, now, LEASE, TTL));
        commits.add(new CommitRequest(SCOPE, k, t, now, TTL, null));
      }
      store.reserveAll(reserves);
      store.commitAll(commits);
    }
    return keys;
  }

  /** N callers, each issuing its next request when the previous one is answered. */
  private static final class Load {
    private final RedisDedupStore store;
    private final String mode;
    private final int batch;
    private final List<DedupKey> dupKeys;

    Load(RedisDedupStore store, String mode, int batch, List<DedupKey> dupKeys) {
      this.store = store;
      this.mode = mode;
      this.batch = batch;
      this.dupKeys = dupKeys;
    }

    long run(int callers, double seconds) throws InterruptedException {
      AtomicLong ops = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      CountDownLatch done = new CountDownLatch(callers);
      List<Thread> threads = new ArrayList<>();
      for (int c = 0; c < callers; c++) {
        if (mode.equals("batch")) {
          Thread t = new Thread(() -> batchLoop(ops, stop, failure, done), "caller-" + c);
          threads.add(t);
          t.start();
        } else {
          next(ops, stop, failure, done);
        }
      }
      boolean finished = done.await((long) (seconds * 1000), TimeUnit.MILLISECONDS);
      stop.set(true);
      if (!finished) {
        done.await(30, TimeUnit.SECONDS);
      }
      for (Thread t : threads) {
        t.join();
      }
      if (failure.get() != null) {
        throw new IllegalStateException("load failed", failure.get());
      }
      return ops.get();
    }

    private void next(
        AtomicLong ops,
        AtomicBoolean stop,
        AtomicReference<Throwable> failure,
        CountDownLatch done) {
      if (stop.get() || failure.get() != null) {
        done.countDown();
        return;
      }
      one()
          .whenComplete(
              (ok, error) -> {
                if (error != null) {
                  failure.compareAndSet(null, error);
                } else if (!stop.get()) {
                  ops.incrementAndGet();
                }
                next(ops, stop, failure, done);
              });
    }

    private CompletableFuture<?> one() {
      long now = System.currentTimeMillis();
      switch (mode) {
        case "reserve":
          return store
              .reserveAsync(new ReserveRequest(SCOPE, randomKey(), FP, token(), now, LEASE, TTL))
              .thenApply(RedisLoadDriver::expectAcquired);
        case "new":
          DedupKey key = randomKey();
          long t = token();
          return store
              .reserveAsync(new ReserveRequest(SCOPE, key, FP, t, now, LEASE, TTL))
              .thenCompose(
                  r -> {
                    expectAcquired(r);
                    return store.commitAsync(new CommitRequest(SCOPE, key, t, now, TTL, null));
                  })
              .thenApply(RedisLoadDriver::expectApplied);
        case "dup":
          DedupKey hit = dupKeys.get(ThreadLocalRandom.current().nextInt(dupKeys.size()));
          return store
              .reserveAsync(new ReserveRequest(SCOPE, hit, FP, token(), now, LEASE, TTL))
              .thenApply(
                  r -> {
                    if (!(r instanceof ReserveResult.Duplicate)) {
                      throw new IllegalStateException("expected a duplicate, got " + r);
                    }
                    return r;
                  });
        default:
          throw new IllegalArgumentException(
              "--mode must be reserve, new, dup or batch, got " + mode);
      }
    }

    private void batchLoop(
        AtomicLong ops,
        AtomicBoolean stop,
        AtomicReference<Throwable> failure,
        CountDownLatch done) {
      try {
        while (!stop.get()) {
          long now = System.currentTimeMillis();
          List<ReserveRequest> reserves = new ArrayList<>(batch);
          List<CommitRequest> commits = new ArrayList<>(batch);
          for (int i = 0; i < batch; i++) {
            DedupKey k = randomKey();
            long t = token();
            reserves.add(new ReserveRequest(SCOPE, k, FP, t, now, LEASE, TTL));
            commits.add(new CommitRequest(SCOPE, k, t, now, TTL, null));
          }
          store.reserveAll(reserves).forEach(RedisLoadDriver::expectAcquired);
          store.commitAll(commits).forEach(RedisLoadDriver::expectApplied);
          if (!stop.get()) {
            ops.addAndGet(batch);
          }
        }
      } catch (RuntimeException e) {
        failure.compareAndSet(null, e);
      } finally {
        done.countDown();
      }
    }
  }

  private static ReserveResult expectAcquired(ReserveResult r) {
    if (!(r instanceof ReserveResult.Acquired)) {
      throw new IllegalStateException("expected a new key, got " + r);
    }
    return r;
  }

  private static SettleResult expectApplied(SettleResult r) {
    if (r != SettleResult.APPLIED) {
      throw new IllegalStateException("expected the commit to apply, got " + r);
    }
    return r;
  }
}
