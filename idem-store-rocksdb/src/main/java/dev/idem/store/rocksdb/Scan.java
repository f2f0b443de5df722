package dev.idem.store.rocksdb;

import org.jspecify.annotations.Nullable;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;

/**
 * An iterator over {@code [lower, upper)} of one column family, positioned at {@code lower}, that
 * closes its native objects. The bounds let RocksDB stop at the range's end without reading past it
 * (or over the tombstones beyond it).
 */
final class Scan implements AutoCloseable {
  final RocksIterator iterator;
  private final ReadOptions options;
  private final @Nullable Slice lowerSlice;
  private final @Nullable Slice upperSlice;

  Scan(RocksDB db, ColumnFamilyHandle family, byte @Nullable [] lower, byte @Nullable [] upper) {
    this.options = new ReadOptions().setFillCache(false);
    this.lowerSlice = lower == null ? null : new Slice(lower);
    this.upperSlice = upper == null ? null : new Slice(upper);
    if (lowerSlice != null) {
      options.setIterateLowerBound(lowerSlice);
    }
    if (upperSlice != null) {
      options.setIterateUpperBound(upperSlice);
    }
    this.iterator = db.newIterator(family, options);
    if (lower != null) {
      iterator.seek(lower);
    } else {
      iterator.seekToFirst();
    }
  }

  /** Throws the error that ended the iteration early, if any. */
  void check() throws RocksDBException {
    iterator.status();
  }

  @Override
  public void close() {
    iterator.close();
    options.close();
    if (lowerSlice != null) {
      lowerSlice.close();
    }
    if (upperSlice != null) {
      upperSlice.close();
    }
  }
}
