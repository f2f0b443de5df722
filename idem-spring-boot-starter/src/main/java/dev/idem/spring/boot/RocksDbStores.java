package dev.idem.spring.boot;

import dev.idem.spi.DedupStore;
import dev.idem.store.rocksdb.RocksDbDedupStore;

/** The RocksDB store from {@code idem.store.rocksdb.*}. */
final class RocksDbStores {
  private RocksDbStores() {}

  static DedupStore create(IdemProperties.RocksDb p) {
    return RocksDbDedupStore.builder(p.getPath()).build();
  }
}
