package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.release;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression: a look-up in a large table must not read the table's whole Bloom filter from the file
 * again. With one unpartitioned filter per table file, a file of a few hundred thousand keys has a
 * filter block larger than a shard of the block cache (a 64 MiB cache has 64 shards of 1 MiB); such
 * a block is never kept, so every reserve read it with {@code pread} and checksummed it: the
 * service on RocksDB fell from about 20,000 to 4,000-5,000 requests/s, at four times the CPU per
 * request, once its first large compaction ran (docs/BENCHMARKS.md). The filters and indexes are
 * now partitioned into blocks of about 4 KiB, each cached on its own.
 *
 * <p>The test reads the bytes the process read through {@code read}/{@code pread} ({@code rchar} in
 * {@code /proc/self/io}, page-cache hits included), so it needs Linux.
 */
class FilterBlockCacheTest {
  private static final Path PROC_IO = Path.of("/proc/self/io");
  private static final int KEYS = 600_000;
  private static final int LOOKUPS = 2_000;

  @TempDir Path dir;

  @Test
  void lookUpsInALargeCompactedTableDoNotRereadItsFilter() throws IOException {
    assumeTrue(Files.isReadable(PROC_IO), "needs /proc/self/io (Linux)");
    long now = System.currentTimeMillis();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(Durability.OS_BUFFERED)
            .blockCacheBytes(1L << 20) // 2 shards of 512 KiB: this table's one filter was ~700 KiB
            .sweepInterval(Duration.ZERO)
            .build()) {
      // given: one table file of 600,000 committed keys at the bottom level
      for (int from = 0; from < KEYS; from += 1_000) {
        List<ReserveRequest> reserves = new ArrayList<>(1_000);
        List<CommitRequest> commits = new ArrayList<>(1_000);
        for (int i = from; i < from + 1_000; i++) {
          long t = token();
          reserves.add(reserve(ORDERS, key("kept-" + i), t, now));
          commits.add(commit(ORDERS, key("kept-" + i), t, now));
        }
        store.reserveAll(reserves);
        store.commitAll(commits);
      }
      store.compact();

      // when: 2,000 reserves of new keys (each released) and 2,000 of committed ones
      long before = readBytes();
      for (int i = 0; i < LOOKUPS; i++) {
        long t = token();
        assertThat(store.reserve(reserve(ORDERS, key("new-" + i), t, now)))
            .isInstanceOf(ReserveResult.Acquired.class);
        store.release(release(ORDERS, key("new-" + i), t, now));
        assertThat(store.reserve(reserve(ORDERS, key("kept-" + (i * 293 % KEYS)), token(), now)))
            .isInstanceOf(ReserveResult.Duplicate.class);
      }
      long read = readBytes() - before;

      // then: far less than one filter per look-up (2,000 x ~700 KiB = ~1.4 GB before the fix);
      // at most a data block and a filter and index partition per duplicate's look-up
      assertThat(read).as("bytes read for %d look-ups", 2 * LOOKUPS).isLessThan(64L << 20);
    }
  }

  private static long readBytes() throws IOException {
    for (String line : Files.readAllLines(PROC_IO)) {
      if (line.startsWith("rchar:")) {
        return Long.parseLong(line.substring("rchar:".length()).trim());
      }
    }
    throw new IllegalStateException("no rchar line in " + PROC_IO);
  }
}
