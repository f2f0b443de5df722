package dev.idem.store.rocksdb;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The changes of one atomic step, gathered on the Java side so that a group commit can copy many
 * steps into one native {@link WriteBatch} (one JNI object per group, not per step). Not
 * thread-safe; owned by the thread that builds it until it is written.
 */
final class Mutations {
  private static final byte PUT = 0;
  private static final byte DELETE = 1;
  private static final byte DELETE_RANGE = 2;

  private byte[] kinds = new byte[4];
  private ColumnFamilyHandle[] families = new ColumnFamilyHandle[4];
  private byte[][] keys = new byte[4][];
  private byte[][] values = new byte[4][];
  private int size;

  void put(ColumnFamilyHandle family, byte[] key, byte[] value) {
    add(PUT, family, key, value);
  }

  void delete(ColumnFamilyHandle family, byte[] key) {
    add(DELETE, family, key, null);
  }

  /** Deletes every key in {@code [begin, end)}. */
  void deleteRange(ColumnFamilyHandle family, byte[] begin, byte[] end) {
    add(DELETE_RANGE, family, begin, end);
  }

  boolean isEmpty() {
    return size == 0;
  }

  int size() {
    return size;
  }

  void clear() {
    Arrays.fill(keys, 0, size, null);
    Arrays.fill(values, 0, size, null);
    Arrays.fill(families, 0, size, null);
    size = 0;
  }

  /**
   * Writes a step of exactly one put or delete directly, without a native write batch (one native
   * call instead of four: create, add, write, free), atomically like any single write.
   *
   * @return false, writing nothing, if the step has more or other changes
   */
  boolean writeAlone(RocksDB db, WriteOptions options) throws RocksDBException {
    if (size != 1) {
      return false;
    }
    switch (kinds[0]) {
      case PUT -> db.put(families[0], options, keys[0], values[0]);
      case DELETE -> db.delete(families[0], options, keys[0]);
      default -> {
        return false;
      }
    }
    return true;
  }

  void appendTo(WriteBatch batch) throws RocksDBException {
    for (int i = 0; i < size; i++) {
      switch (kinds[i]) {
        case PUT -> batch.put(families[i], keys[i], values[i]);
        case DELETE -> batch.delete(families[i], keys[i]);
        default -> batch.deleteRange(families[i], keys[i], values[i]);
      }
    }
  }

  private void add(byte kind, ColumnFamilyHandle family, byte[] key, byte @Nullable [] value) {
    if (size == kinds.length) {
      int capacity = size * 2;
      kinds = Arrays.copyOf(kinds, capacity);
      families = Arrays.copyOf(families, capacity);
      keys = Arrays.copyOf(keys, capacity);
      values = Arrays.copyOf(values, capacity);
    }
    kinds[size] = kind;
    families[size] = family;
    keys[size] = key;
    values[size] = value;
    size++;
  }
}
