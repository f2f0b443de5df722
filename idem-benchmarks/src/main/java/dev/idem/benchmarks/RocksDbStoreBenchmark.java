package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * Reserve + commit of a new key (the work of one first delivery) on the RocksDB store, per
 * durability mode, next to its anchor: one raw RocksDB {@code put} of a 64-byte key with the same
 * sync setting (synced for FSYNC and GROUP_COMMIT, unsynced for OS_BUFFERED), in the same run.
 *
 * <p>Run with 1 and 16 threads:
 *
 * <pre>
 * ./mvnw -B -q -pl idem-benchmarks -am package -DskipTests
 * java -jar idem-benchmarks/target/benchmarks.jar RocksDbStoreBenchmark -t 1
 * java -jar idem-benchmarks/target/benchmarks.jar RocksDbStoreBenchmark -t 16
 * </pre>
 *
 * <p>The databases live under {@code java.io.tmpdir} (override with {@code -Didem.bench.dir=...} to
 * measure another disk) and are deleted after each trial.
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RocksDbStoreBenchmark {
  private static final Scope SCOPE = Scope.of("bench-orders");
  private static final Ttl WINDOW = new Ttl(TimeUnit.DAYS.toMillis(1), Expiry.SLIDING);
  private static final long LEASE = 60_000;

  @Param({"GROUP_COMMIT", "FSYNC", "OS_BUFFERED"})
  public Durability durability;

  /**
   * The group-commit delay bound in microseconds; the store's default is 0. Compare with {@code -p
   * maxDelayMicros=0,100,1000}.
   */
  @Param({"0"})
  public long maxDelayMicros;

  private Path storeDir;
  private Path rawDir;
  private RocksDbDedupStore store;
  private RocksDB raw;
  private Options rawOptions;
  private WriteOptions rawWrite;
  private final AtomicLong threads = new AtomicLong();

  @Setup(Level.Trial)
  public void open() throws IOException, RocksDBException {
    Path base = Path.of(System.getProperty("idem.bench.dir", System.getProperty("java.io.tmpdir")));
    storeDir = Files.createTempDirectory(base, "idem-bench-store");
    rawDir = Files.createTempDirectory(base, "idem-bench-raw");
    store =
        RocksDbDedupStore.builder(storeDir)
            .durability(durability)
            .sweepInterval(Duration.ZERO)
            .build();
    RocksDB.loadLibrary();
    rawOptions = new Options().setCreateIfMissing(true);
    raw = RocksDB.open(rawOptions, rawDir.toString());
    rawWrite = new WriteOptions().setSync(durability != Durability.OS_BUFFERED);
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    raw.close();
    rawOptions.close();
    rawWrite.close();
    delete(storeDir);
    delete(rawDir);
  }

  /** One thread's key sequence. */
  @State(org.openjdk.jmh.annotations.Scope.Thread)
  public static class Keys {
    long thread;
    long next;
    long salt;

    @Setup(Level.Trial)
    public void init(RocksDbStoreBenchmark bench) {
      thread = bench.threads.incrementAndGet();
      salt = ThreadLocalRandom.current().nextLong();
    }

    /** A key with uniform words, like a SHA-256 digest: random positions in RocksDB and stripes. */
    DedupKey nextKey() {
      long seed = salt ^ (thread << 40) ^ ++next;
      return DedupKey.ofWords(mix(seed), mix(seed + 1), mix(seed + 2), mix(seed + 3));
    }
  }

  /** Idem: reserve a new key, then commit it (two atomic steps, each durable per the mode). */
  @Benchmark
  public SettleResult reserveCommit(Keys keys) {
    DedupKey key = keys.nextKey();
    long token = (keys.thread << 48) ^ keys.next;
    long now = System.currentTimeMillis();
    store.reserve(new ReserveRequest(SCOPE, key, null, token, now, LEASE, WINDOW));
    return store.commit(new CommitRequest(SCOPE, key, token, now, WINDOW, null));
  }

  /** Anchor: one raw RocksDB put of a key of the same size, with the mode's sync setting. */
  @Benchmark
  public DedupKey rawPut(Keys keys) throws RocksDBException {
    DedupKey key = keys.nextKey();
    byte[] k = new byte[64];
    byte[] digest = key.toBytes();
    System.arraycopy(digest, 0, k, 0, 32);
    System.arraycopy(digest, 0, k, 32, 32);
    raw.put(rawWrite, k, digest);
    return key;
  }

  /** SplitMix64's finalizer: turns a counter into a uniformly distributed word. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  static void delete(Path dir) throws IOException {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
