package dev.idem.store.rocksdb;

import dev.idem.Scope;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/** Reads a closed store's directory directly, to check what the public API cannot see. */
final class RawDb {
  private RawDb() {}

  /** Counts the keys of one column family that start with the scope's prefix. */
  static long countScopeKeys(Path dir, String family, Scope scope) throws RocksDBException {
    return count(dir, family, new ScopeKeys(scope).prefix);
  }

  /** Counts the keys of one column family that start with {@code prefix}. */
  static long count(Path dir, String family, byte[] prefix) throws RocksDBException {
    return withFamily(
        dir,
        family,
        (db, handle) -> {
          long n = 0;
          try (RocksIterator it = db.newIterator(handle)) {
            for (it.seek(prefix); it.isValid(); it.next()) {
              byte[] key = it.key();
              if (!startsWith(key, prefix)) {
                break;
              }
              n++;
            }
          }
          return n;
        });
  }

  /** Puts one raw value (for corruption and format tests). */
  static void put(Path dir, String family, byte[] key, byte[] value) throws RocksDBException {
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    for (String name : Handles.FAMILIES) {
      descriptors.add(new ColumnFamilyDescriptor(name.getBytes()));
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options = new DBOptions();
        RocksDB db = RocksDB.open(options, dir.toString(), descriptors, handles)) {
      db.put(handles.get(Handles.FAMILIES.indexOf(family)), key, value);
      handles.forEach(ColumnFamilyHandle::close);
    }
  }

  interface Reader<T> {
    T read(RocksDB db, ColumnFamilyHandle handle) throws RocksDBException;
  }

  static <T> T withFamily(Path dir, String family, Reader<T> reader) throws RocksDBException {
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    for (String name : Handles.FAMILIES) {
      descriptors.add(new ColumnFamilyDescriptor(name.getBytes()));
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options = new DBOptions();
        RocksDB db = RocksDB.openReadOnly(options, dir.toString(), descriptors, handles)) {
      try {
        return reader.read(db, handles.get(Handles.FAMILIES.indexOf(family)));
      } finally {
        handles.forEach(ColumnFamilyHandle::close);
      }
    }
  }

  private static boolean startsWith(byte[] key, byte[] prefix) {
    if (key.length < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (key[i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }
}
