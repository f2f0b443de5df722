package dev.idem.server;

import dev.idem.DedupListener;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.config.RocksDbDurability;
import dev.idem.server.config.StoreSettings;
import dev.idem.spi.DedupStore;
import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.store.memory.MemoryDedupStore;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Opens each distinct store once: pipelines whose store settings are equal share one instance (one
 * RocksDB directory, one Redis connection, one connection pool). A memory store learns every
 * pipeline's {@code max_keys} when it is built.
 */
final class StoreRegistry {
  private StoreRegistry() {}

  /**
   * Opens the stores.
   *
   * @param wanted each store's settings, with the memory bound per scope of the pipelines using it
   * @param listener hears store-level events (expiry, eviction)
   * @param time the clock
   * @return the open stores, by settings, in the order given
   * @throws IdemConfigException if a store cannot be opened, naming it and why
   */
  static Map<StoreSettings, DedupStore> open(
      Map<StoreSettings, Map<Scope, Long>> wanted, DedupListener listener, TimeSource time) {
    Map<StoreSettings, DedupStore> open = new LinkedHashMap<>();
    try {
      for (Map.Entry<StoreSettings, Map<Scope, Long>> e : wanted.entrySet()) {
        open.put(e.getKey(), open(e.getKey(), e.getValue(), listener, time));
      }
      return open;
    } catch (RuntimeException failure) {
      closeAll(new ArrayList<>(open.values()));
      throw failure;
    }
  }

  static void closeAll(List<DedupStore> stores) {
    for (DedupStore s : stores) {
      try {
        s.close();
      } catch (RuntimeException ignored) {
        // Closing after a failed start is best effort.
      }
    }
  }

  private static DedupStore open(
      StoreSettings s, Map<Scope, Long> maxKeys, DedupListener listener, TimeSource time) {
    try {
      return switch (s.type()) {
        case MEMORY -> {
          MemoryDedupStore.Builder b =
              MemoryDedupStore.builder()
                  .maxKeysPerScope(toInt(Objects.requireNonNull(s.maxKeys())))
                  .listener(listener);
          maxKeys.forEach((scope, n) -> b.maxKeys(scope, toInt(n)));
          yield b.build();
        }
        case ROCKSDB ->
            RocksDbDedupStore.builder(Objects.requireNonNull(s.path()))
                .durability(durability(Objects.requireNonNull(s.durability())))
                .timeSource(time)
                .listener(listener)
                .build();
        case REDIS ->
            RedisDedupStore.builder(Objects.requireNonNull(s.url()))
                .prefix(Objects.requireNonNull(s.prefix()))
                .build();
        case JDBC -> {
          JdbcDedupStore.Builder b =
              JdbcDedupStore.builder(Objects.requireNonNull(s.url()))
                  .tablePrefix(Objects.requireNonNull(s.prefix()))
                  .timeSource(time)
                  .listener(listener);
          if (s.username() != null) {
            b.user(s.username());
          }
          if (s.password() != null) {
            b.password(s.password());
          }
          yield b.build();
        }
      };
    } catch (IdemConfigException e) {
      throw new IdemConfigException("store " + s.describe() + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw new IdemConfigException(
          "cannot open store "
              + s.describe()
              + ": "
              + e.getMessage()
              + (s.type() == dev.idem.server.config.StoreType.ROCKSDB
                  ? " (is another idem process using this directory? stop it, or use the admin"
                      + " API of the running service)"
                  : ""));
    }
  }

  private static int toInt(long n) {
    return (int) Math.min(Integer.MAX_VALUE, n);
  }

  private static Durability durability(RocksDbDurability d) {
    return switch (d) {
      case FSYNC -> Durability.FSYNC;
      case GROUP_COMMIT -> Durability.GROUP_COMMIT;
      case OS_BUFFERED -> Durability.OS_BUFFERED;
    };
  }
}
