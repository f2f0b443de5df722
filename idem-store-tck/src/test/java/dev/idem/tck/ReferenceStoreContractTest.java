package dev.idem.tck;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;

/** The suite passes on the reference store, with every capability on. */
class ReferenceStoreContractTest extends DedupStoreContract {

  @Override
  protected StoreCapabilities expectedCapabilities() {
    return ReferenceStore.all();
  }

  @Override
  protected DedupStore newStore(TimeSource time) {
    return new ReferenceStore(
        new ReferenceStore.Storage(), Integer.MAX_VALUE, ReferenceStore.all());
  }

  @Override
  protected DedupStore newBoundedStore(TimeSource time, int maxKeysPerScope) {
    return new ReferenceStore(new ReferenceStore.Storage(), maxKeysPerScope, ReferenceStore.all());
  }

  @Override
  protected DedupStore reopen(DedupStore store, TimeSource time) {
    ReferenceStore old = (ReferenceStore) store;
    old.close();
    return new ReferenceStore(old.storage, old.maxKeysPerScope(), old.capabilities());
  }
}
