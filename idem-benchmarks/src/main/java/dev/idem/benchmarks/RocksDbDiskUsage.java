package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Bytes on disk per committed key: writes N committed keys (random 32-byte digests, no result, no
 * fingerprint) into a fresh store, compacts every column family fully ({@link
 * RocksDbDedupStore#compact()}), closes it and reports the SST + WAL bytes divided by N.
 *
 * <pre>
 * ./mvnw -B -q -pl idem-benchmarks -am package -DskipTests
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.RocksDbDiskUsage [N] [ttl|none] [dir]
 * </pre>
 *
 * <p>N defaults to 10,000,000; {@code ttl} (default) commits with a 24 h sliding window, so each
 * key also has an expiry-index entry; {@code none} keeps keys forever (no index entry). The keys
 * are written with reserveAll/commitAll batches of 1,000 under OS_BUFFERED (durability does not
 * change what ends up on disk, only how fast it gets there).
 */
public final class RocksDbDiskUsage {
  private RocksDbDiskUsage() {}

  public static void main(String[] args) throws Exception {
    long n = args.length > 0 ? Long.parseLong(args[0].replace("_", "")) : 10_000_000L;
    boolean withTtl = args.length <= 1 || !args[1].equals("none");
    Path base = Path.of(args.length > 2 ? args[2] : System.getProperty("java.io.tmpdir"));
    Path dir = Files.createTempDirectory(base, "idem-disk-usage");
    Ttl ttl = withTtl ? new Ttl(TimeUnit.DAYS.toMillis(1), Expiry.SLIDING) : Ttl.NONE;
    Scope scope = Scope.of("shop-orders");
    long salt = ThreadLocalRandom.current().nextLong();
    long started = System.nanoTime();
    long written;
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(Durability.OS_BUFFERED)
            .sweepInterval(Duration.ZERO)
            .build()) {
      int batch = 1_000;
      List<ReserveRequest> reserves = new ArrayList<>(batch);
      List<CommitRequest> commits = new ArrayList<>(batch);
      long now = System.currentTimeMillis();
      for (long i = 0; i < n; ) {
        reserves.clear();
        commits.clear();
        for (int b = 0; b < batch && i < n; b++, i++) {
          DedupKey key = randomKey(salt, i);
          long token = i + 1;
          reserves.add(new ReserveRequest(scope, key, null, token, now, 60_000, ttl));
          commits.add(new CommitRequest(scope, key, token, now, ttl, null));
        }
        store.reserveAll(reserves);
        store.commitAll(commits);
        if (i % 1_000_000 == 0) {
          System.err.printf("%,d keys written%n", i);
        }
      }
      written = System.nanoTime();
      store.compact();
    }
    long sst = sizeOf(dir, ".sst");
    long wal = sizeOf(dir, ".log");
    long all = sizeOf(dir, "");
    System.out.printf(
        "keys=%d ttl=%s sst=%d wal=%d total_dir=%d bytes_per_key(sst+wal)=%.1f write_s=%.1f"
            + " compact_s=%.1f dir=%s%n",
        n,
        withTtl ? "24h-sliding" : "none",
        sst,
        wal,
        all,
        (sst + wal) / (double) n,
        (written - started) / 1e9,
        (System.nanoTime() - written) / 1e9,
        dir);
    RocksDbStoreBenchmark.delete(dir);
  }

  /** A uniformly random 32-byte digest, as SHA-256 key digests are. */
  private static DedupKey randomKey(long salt, long i) {
    long h = mix(salt ^ i);
    return DedupKey.ofWords(h, mix(h), mix(h + 1), mix(h + 2));
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  private static long sizeOf(Path dir, String suffix) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .filter(p -> p.getFileName().toString().endsWith(suffix))
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              })
          .sum();
    }
  }
}
