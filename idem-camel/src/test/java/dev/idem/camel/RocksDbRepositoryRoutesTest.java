package dev.idem.camel;

import dev.idem.spi.DedupStore;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The Camel route contract on the RocksDB store, in a temporary directory. */
class RocksDbRepositoryRoutesTest extends RepositoryRoutesContract {
  @TempDir Path dir;

  @Override
  DedupStore openStore() {
    return RocksDbDedupStore.builder(dir.resolve("idem")).build();
  }

  @Override
  void closeStore(DedupStore store) {
    store.close();
  }
}
