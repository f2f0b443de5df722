package dev.idem.tck;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;
import dev.idem.store.memory.MemoryDedupStore;
import dev.idem.store.memory.MemoryStoreConfig;

/** The in-memory store passes the contract suite unchanged. */
class MemoryDedupStoreContractTest extends DedupStoreContract {

  @Override // bounded, outbox; not durable, no native expiry
  protected StoreCapabilities expectedCapabilities() {
    return new StoreCapabilities(true, false, false, true);
  }

  @Override
  protected DedupStore newStore(TimeSource time) {
    // Large enough that the suite's own tests never evict; the bounded tests set their own bound.
    return MemoryDedupStore.builder().maxKeysPerScope(MemoryStoreConfig.MAX_KEYS).build();
  }

  @Override
  protected DedupStore newBoundedStore(TimeSource time, int maxKeysPerScope) {
    return MemoryDedupStore.builder().maxKeysPerScope(maxKeysPerScope).build();
  }
}
