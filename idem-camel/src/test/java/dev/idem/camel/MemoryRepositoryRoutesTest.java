package dev.idem.camel;

import dev.idem.spi.DedupStore;
import dev.idem.store.memory.MemoryDedupStore;

/** The Camel route contract on the in-memory store. */
class MemoryRepositoryRoutesTest extends RepositoryRoutesContract {
  @Override
  DedupStore openStore() {
    return MemoryDedupStore.builder().build();
  }

  @Override
  void closeStore(DedupStore store) {
    store.close();
  }
}
