package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 *     THREADS SECONDS_PER_SLOT ROUNDS SETTING[,SETTING...] [DUPLICATES [WARM_UP_MIB]]
 * e.g. ... RocksDbDurabilityAlternating 16 3 3 GROUP_COMMIT:0,FSYNC,GROUP_COMMIT:1000
 *      ... RocksDbDurabilityAlternating 16 10 1 GROUP_COMMIT 0.5 100
 * </pre>
 *
 * <p>A setting is a durability mode, optionally with {@code :<group-commit delay in µs>}. Each slot
 * opens a fresh store in {@code java.io.tmpdir}, runs THREADS writers for the slot, prints ops/s,
 * the operations counted (committed keys and duplicates), the process's CPU time per operation
 * while the writers ran, and the load average, and deletes the store.
 *
 * <p>DUPLICATES (0 to 1, default 0) is the share of operations that reserve one of the writer's
 * last 1,024 committed keys again instead of a new key: a duplicate, whose sliding window the store
 * refreshes (the service benchmark posts half duplicates). WARM_UP_MIB (default 0) first writes
 * that many MiB of committed results in synced batches, so that the WAL RocksDB writes during the
 * slot is a recycled full-size file (with a store that recycles WAL files), as in a store that has
 * run for a while; the warm-up is not timed. To count syncs per committed key, run one setting per
 * process under {@code perf stat -e syscalls:sys_enter_fdatasync} and divide by the keys printed.
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
    double duplicates = args.length > 4 ? Double.parseDouble(args[4]) : 0;
    long warmUpMib = args.length > 5 ? Long.parseLong(args[5]) : 0;
    for (int round = 1; round <= rounds; round++) {
      for (String setting : settings) {
        String[] parts = setting.split(":");
        Durability durability = Durability.valueOf(parts[0]);
        long delayMicros = parts.length > 1 ? Long.parseLong(parts[1]) : 0;
        Slot slot = slot(durability, delayMicros, threads, slotMillis, duplicates, warmUpMib);
        System.out.printf(
            "round %d  %-20s threads=%-3d %10.0f reserve+commit/s  keys %d duplicates %d"
                + "  cpu %.1f us/op  loadavg %s%n",
            round,
            setting,
            threads,
            slot.rate(),
            slot.keys(),
            slot.duplicates(),
            slot.cpuNanos() / 1e3 / Math.max(1, slot.keys() + slot.duplicates()),
            Files.readString(Path.of("/proc/loadavg")).trim());
      }
    }
  }

  /**
   * One slot's outcome: operations per second, committed keys, duplicates answered, and the CPU
   * time the whole process used while the writers ran (RocksDB's background threads included).
   */
  private record Slot(double rate, long keys, long duplicates, long cpuNanos) {}

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  private static Slot slot(
      Durability durability,
      long delayMicros,
      int threads,
      long millis,
      double duplicates,
      long warmUpMib)
      throws Exception {
    Path dir = Files.createTempDirectory("idem-alternating");
    AtomicLong keys = new AtomicLong();
    AtomicLong hits = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(durability)
            .groupCommitMaxDelay(Duration.ofNanos(delayMicros * 1_000))
            .sweepInterval(Duration.ZERO)
            .build()) {
      warmUp(store, warmUpMib);
      Thread[] writers = new Thread[threads];
      for (int t = 0; t < threads; t++) {
        long id = t + 1;
        writers[t] =
            new Thread(
                () -> {
                  ThreadLocalRandom random = ThreadLocalRandom.current();
                  long salt = random.nextLong();
                  DedupKey[] recent = new DedupKey[1024];
                  long committed = 0;
                  for (long i = 1; !stop.get(); i++) {
                    long now = System.currentTimeMillis();
                    long token = (id << 48) ^ i;
                    if (committed > 0 && random.nextDouble() < duplicates) {
                      DedupKey seen = recent[random.nextInt((int) Math.min(committed, 1024))];
                      store.reserve(
                          new ReserveRequest(SCOPE, seen, null, token, now, 60_000, WINDOW));
                      hits.incrementAndGet();
                      continue;
                    }
                    DedupKey key = key(salt ^ (id << 40) ^ i);
                    store.reserve(new ReserveRequest(SCOPE, key, null, token, now, 60_000, WINDOW));
                    store.commit(new CommitRequest(SCOPE, key, token, now, WINDOW, null));
                    recent[(int) (committed++ & 1023)] = key;
                    keys.incrementAndGet();
                  }
                });
        writers[t].start();
      }
      long start = System.nanoTime();
      long cpuStart = processCpuNanos();
      Thread.sleep(millis);
      stop.set(true);
      for (Thread w : writers) {
        w.join();
      }
      long cpu = processCpuNanos() - cpuStart;
      double seconds = (System.nanoTime() - start) / 1e9;
      return new Slot((keys.get() + hits.get()) / seconds, keys.get(), hits.get(), cpu);
    } finally {
      RocksDbStoreBenchmark.delete(dir);
    }
  }

  private static DedupKey key(long seed) {
    return DedupKey.ofWords(
        RocksDbStoreBenchmark.mix(seed),
        RocksDbStoreBenchmark.mix(seed + 1),
        RocksDbStoreBenchmark.mix(seed + 2),
        RocksDbStoreBenchmark.mix(seed + 3));
  }

  /**
   * Writes about {@code mib} MiB of committed 16 KiB results without a window in synced batches of
   * 64 keys (1 MiB). They land in the entries column family only, so each time its 32 MiB memtable
   * fills, RocksDB switches to a new WAL and, once the memtable is flushed, the old WAL (about 32
   * MiB, holding nothing else) is obsolete: recycled if the store recycles WAL files, deleted if
   * not. Give at least 128 MiB for the slot to start in a full-size recycled WAL.
   */
  private static void warmUp(RocksDbDedupStore store, long mib) {
    Scope scope = Scope.of("bench-warm-up");
    byte[] result = new byte[16 << 10];
    long batches = mib * 1024 / (16 * 64);
    long salt = ThreadLocalRandom.current().nextLong();
    for (long b = 0; b < batches; b++) {
      long now = System.currentTimeMillis();
      List<ReserveRequest> reserves = new ArrayList<>(64);
      List<CommitRequest> commits = new ArrayList<>(64);
      for (int k = 0; k < 64; k++) {
        DedupKey key = key(salt ^ (b << 8) ^ k);
        long token = (b << 8) + k + 1;
        reserves.add(new ReserveRequest(scope, key, null, token, now, 60_000, Ttl.NONE));
        commits.add(new CommitRequest(scope, key, token, now, Ttl.NONE, result));
      }
      store.reserveAll(reserves);
      store.commitAll(commits);
    }
  }
}
