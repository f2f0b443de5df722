package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reserve + commit throughput of several store settings measured in alternation (A B C A B C ...),
 * so that on a shared, noisy machine each setting sees the same disk and CPU weather. A companion
 * to {@link RocksDbStoreBenchmark}, whose JMH runs measure one setting after the other.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.RocksDbDurabilityAlternating \
 *     THREADS SECONDS_PER_SLOT ROUNDS SETTING[,SETTING...]
 * e.g. ... RocksDbDurabilityAlternating 16 3 3 GROUP_COMMIT:0,FSYNC,GROUP_COMMIT:1000
 * </pre>
 *
 * <p>A setting is a durability mode, optionally with {@code :<group-commit delay in µs>}. Each slot
 * opens a fresh store in {@code java.io.tmpdir}, runs THREADS writers for the slot, prints ops/s
 * and the load average, and deletes the store.
 */
public final class RocksDbDurabilityAlternating {
  private static final Scope SCOPE = Scope.of("bench-alternating");
  private static final Ttl WINDOW = new Ttl(TimeUnit.DAYS.toMillis(1), Expiry.SLIDING);

  private RocksDbDurabilityAlternating() {}

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    long slotMillis = TimeUnit.SECONDS.toMillis(Long.parseLong(args[1]));
    int rounds = Integer.parseInt(args[2]);
    String[] settings = args[3].split(",");
    for (int round = 1; round <= rounds; round++) {
      for (String setting : settings) {
        String[] parts = setting.split(":");
        Durability durability = Durability.valueOf(parts[0]);
        long delayMicros = parts.length > 1 ? Long.parseLong(parts[1]) : 0;
        double rate = slot(durability, delayMicros, threads, slotMillis);
        System.out.printf(
            "round %d  %-20s threads=%-3d %10.0f reserve+commit/s  loadavg %s%n",
            round, setting, threads, rate, Files.readString(Path.of("/proc/loadavg")).trim());
      }
    }
  }

  private static double slot(Durability durability, long delayMicros, int threads, long millis)
      throws Exception {
    Path dir = Files.createTempDirectory("idem-alternating");
    AtomicLong ops = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(durability)
            .groupCommitMaxDelay(Duration.ofNanos(delayMicros * 1_000))
            .sweepInterval(Duration.ZERO)
            .build()) {
      Thread[] writers = new Thread[threads];
      for (int t = 0; t < threads; t++) {
        long id = t + 1;
        writers[t] =
            new Thread(
                () -> {
                  long salt = ThreadLocalRandom.current().nextLong();
                  for (long i = 1; !stop.get(); i++) {
                    long seed = salt ^ (id << 40) ^ i;
                    DedupKey key =
                        DedupKey.ofWords(
                            RocksDbStoreBenchmark.mix(seed),
                            RocksDbStoreBenchmark.mix(seed + 1),
                            RocksDbStoreBenchmark.mix(seed + 2),
                            RocksDbStoreBenchmark.mix(seed + 3));
                    long token = (id << 48) ^ i;
                    long now = System.currentTimeMillis();
                    store.reserve(new ReserveRequest(SCOPE, key, null, token, now, 60_000, WINDOW));
                    store.commit(new CommitRequest(SCOPE, key, token, now, WINDOW, null));
                    ops.incrementAndGet();
                  }
                });
        writers[t].start();
      }
      long start = System.nanoTime();
      Thread.sleep(millis);
      stop.set(true);
      for (Thread w : writers) {
        w.join();
      }
      return ops.get() / ((System.nanoTime() - start) / 1e9);
    } finally {
      RocksDbStoreBenchmark.delete(dir);
    }
  }
}
