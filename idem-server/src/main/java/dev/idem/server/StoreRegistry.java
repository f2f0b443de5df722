package dev.idem.server;

import dev.idem.DedupListener;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.server.config.RedisLayout;
import dev.idem.server.config.RocksDbDurability;
import dev.idem.server.config.StoreSettings;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;
import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.store.memory.MemoryDedupStore;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.store.redis.RedisDedupStoreConfig;
import dev.idem.store.rocksdb.Durability;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens each distinct store once: pipelines whose store settings are equal share one instance (one
 * RocksDB directory, one Redis connection, one connection pool). A memory store learns every
 * pipeline's {@code max_keys} when it is built.
 *
 * <p>A Redis or JDBC store that cannot be reached at start ({@link StoreUnavailableException}) does
 * not stop the service unless its {@code fail_fast} is set: a {@link DeferredStore} stands in for
 * it and opens it in the background, retrying every second. Any other failure (a bad setting, a
 * refused Redis setting, a RocksDB directory in use) stops the start, naming the store.
 */
final class StoreRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(StoreRegistry.class);

  /** How often a store that was unreachable at start is tried again. */
  static final Duration REOPEN_EVERY = Duration.ofSeconds(1);

  /** What a JDBC store can do, known before it opens. */
  private static final StoreCapabilities JDBC = new StoreCapabilities(false, true, false, true);

  /**
   * What a Redis store can do, known before it opens (the configuration refuses async delivery on a
   * cluster whose prefix has no hash tag, where the store has no outbox).
   */
  private static final StoreCapabilities REDIS = new StoreCapabilities(false, true, true, true);

  private StoreRegistry() {}

  /**
   * Opens the stores.
   *
   * @param wanted each store's settings, with the memory bound per scope of the pipelines using it
   * @param listener hears store-level events (expiry, eviction)
   * @param time the clock
   * @param deferUnreachable whether a Redis or JDBC store that cannot be reached (and has no {@code
   *     fail_fast}) is opened in the background instead of failing
   * @return the open stores, by settings, in the order given
   * @throws IdemConfigException if a store cannot be opened, naming it and why
   */
  static Map<StoreSettings, DedupStore> open(
      Map<StoreSettings, Map<Scope, Long>> wanted,
      DedupListener listener,
      TimeSource time,
      boolean deferUnreachable) {
    Map<StoreSettings, DedupStore> open = new LinkedHashMap<>();
    try {
      for (Map.Entry<StoreSettings, Map<Scope, Long>> e : wanted.entrySet()) {
        StoreSettings s = e.getKey();
        Map<Scope, Long> maxKeys = e.getValue();
        DedupStore store;
        try {
          store = openNow(s, maxKeys, listener, time);
        } catch (StoreUnavailableException u) {
          if (!deferUnreachable || s.faults().failFast() || capabilitiesAhead(s) == null) {
            throw failure(s, u);
          }
          LOG.warn(
              "store {} cannot be reached ({}); starting without it: its pipelines answer 503"
                  + " and /health reports it until it opens (set fail_fast: true to stop instead)",
              s.describe(),
              u.getMessage());
          store =
              new DeferredStore(
                  s.describe(),
                  Objects.requireNonNull(capabilitiesAhead(s)),
                  () -> openNow(s, maxKeys, listener, time),
                  String.valueOf(u.getMessage()),
                  REOPEN_EVERY);
        } catch (RuntimeException failure) {
          throw failure(s, failure);
        }
        open.put(s, store);
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

  /** What a store that can be deferred will be able to do; null for the embedded ones. */
  private static @Nullable StoreCapabilities capabilitiesAhead(StoreSettings s) {
    return switch (s.type()) {
      case REDIS -> REDIS;
      case JDBC -> JDBC;
      case MEMORY, ROCKSDB -> null;
    };
  }

  private static DedupStore openNow(
      StoreSettings s, Map<Scope, Long> maxKeys, DedupListener listener, TimeSource time) {
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
              .commandTimeout(s.faults().timeout())
              .reconnectDelay(s.faults().reconnectDelay())
              .requireDurable(s.faults().requireDurable())
              .layout(
                  s.redisLayout() == RedisLayout.COMPACT
                      ? RedisDedupStoreConfig.Layout.COMPACT
                      : RedisDedupStoreConfig.Layout.STANDARD)
              .compactShards(
                  s.compactShards() == null
                      ? RedisDedupStoreConfig.DEFAULT_COMPACT_SHARDS
                      : s.compactShards())
              .build();
      case JDBC -> {
        JdbcDedupStore.Builder b =
            JdbcDedupStore.builder(Objects.requireNonNull(s.url()))
                .tablePrefix(Objects.requireNonNull(s.prefix()))
                .timeout(s.faults().timeout())
                .timeSource(time)
                .listener(listener);
        if (s.jdbcLayout() != null) {
          b.layout(s.jdbcLayout());
        }
        if (s.username() != null) {
          b.user(s.username());
        }
        if (s.password() != null) {
          b.password(s.password());
        }
        String instanceId = s.instanceId() != null ? s.instanceId() : hostName();
        if (instanceId != null) {
          b.instanceId(instanceId);
        }
        yield b.build();
      }
    };
  }

  /**
   * The default JDBC instance id ({@code store.instance_id} unset): the host name, which in a
   * StatefulSet is the pod's stable name. Null (claims then run out instead of being released at a
   * restart) when it cannot be found.
   */
  private static @Nullable String hostName() {
    String env = System.getenv("HOSTNAME");
    if (env != null && !env.isBlank() && env.length() <= 255) {
      return env.strip();
    }
    try {
      String name = InetAddress.getLocalHost().getHostName();
      return name == null || name.isBlank() || name.length() > 255 ? null : name;
    } catch (UnknownHostException | SecurityException e) {
      LOG.warn(
          "store.instance_id unset and the host name is unknown ({}): a restart will not"
              + " release this instance's outbox claims; they run out after store.claim_timeout",
          e.toString());
      return null;
    }
  }

  private static IdemConfigException failure(StoreSettings s, RuntimeException e) {
    if (e instanceof IdemConfigException) {
      return new IdemConfigException("store " + s.describe() + ": " + e.getMessage());
    }
    return new IdemConfigException(
        "cannot open store "
            + s.describe()
            + ": "
            + e.getMessage()
            + (s.type() == dev.idem.server.config.StoreType.ROCKSDB
                ? " (is another idem process using this directory? stop it, or use the admin"
                    + " API of the running service)"
                : ""));
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
