package dev.idem.store.rocksdb;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;
import dev.idem.tck.DedupStoreContract;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store contract suite, unchanged, on a fresh directory per store; {@code reopen} closes the
 * store and opens its directory again.
 *
 * <p>The background sweeper runs on the suite's manual clock, once a minute of real time: the
 * suite's tests finish well within that, and some of them pin what a reserve replaced (an expired
 * lease), which a sweep racing with them would legitimately change. The sweeper itself is tested on
 * a manual clock in {@link RocksDbDedupStoreTest}.
 */
class RocksDbDedupStoreContractTest extends DedupStoreContract {
  @TempDir Path root;

  @Override // durable, outbox
  protected StoreCapabilities expectedCapabilities() {
    return new StoreCapabilities(false, true, false, true);
  }

  @Override
  protected DedupStore newStore(TimeSource time) throws Exception {
    return open(Files.createTempDirectory(root, "store"), time);
  }

  @Override
  protected DedupStore reopen(DedupStore store, TimeSource time) {
    Path dir = ((RocksDbDedupStore) store).config().directory();
    store.close();
    return open(dir, time);
  }

  private static DedupStore open(Path dir, TimeSource time) {
    return RocksDbDedupStore.builder(dir)
        .timeSource(time)
        .sweepInterval(Duration.ofMinutes(1))
        .blockCacheBytes(8L << 20)
        .build();
  }
}
