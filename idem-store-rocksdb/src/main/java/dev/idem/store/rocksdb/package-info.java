/**
 * The embedded RocksDB store: durable deduplication state and a transactional outbox in one local
 * directory, owned by one process. The entry point is {@link
 * dev.idem.store.rocksdb.RocksDbDedupStore#builder(java.nio.file.Path)}.
 */
@NullMarked
package dev.idem.store.rocksdb;

import org.jspecify.annotations.NullMarked;
