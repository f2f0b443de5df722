package dev.idem.server.deliver;

import dev.idem.ManualTimeSource;
import dev.idem.store.memory.MemoryDedupStore;

/** The dispatcher's guarantees over the memory store's outbox (idem-core). */
class OutboxDispatcherMemoryStoreTest extends OutboxDispatcherContract {

  @Override
  TestOutbox newOutbox(ManualTimeSource clock) {
    return new DedupStoreOutbox<>(MemoryDedupStore.builder().build(), clock, () -> {});
  }
}
