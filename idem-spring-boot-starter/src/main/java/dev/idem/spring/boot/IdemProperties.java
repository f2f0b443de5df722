package dev.idem.spring.boot;

import dev.idem.DedupConfig;
import dev.idem.Expiry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code idem.*} properties: the store and the scopes. Bound once at start-up and turned into
 * Idem's immutable configs in one place ({@link ScopeProperties#toConfig()}); a bad value fails the
 * start with the property's name.
 *
 * <pre>
 * idem.store.type=redis               # memory (default) | rocksdb | redis | jdbc
 * idem.scopes.orders.ttl=24h
 * idem.scopes.orders.lease=30s
 * </pre>
 */
@ConfigurationProperties("idem")
public class IdemProperties {
  private final Store store = new Store();

  /**
   * Scopes by name (pipeline or pipeline/step): each gets a Deduplicator bean named
   * <name>Deduplicator.
   */
  private final Map<String, ScopeProperties> scopes = new LinkedHashMap<>();

  private final Metrics metrics = new Metrics();

  /** Creates the properties with their defaults. */
  public IdemProperties() {}

  /**
   * Returns the store settings.
   *
   * @return the store settings
   */
  public Store getStore() {
    return store;
  }

  /**
   * Returns the scopes by name ({@code pipeline} or {@code pipeline/step}); each gets a {@code
   * Deduplicator} bean named {@code <name>Deduplicator}.
   *
   * @return the scopes
   */
  public Map<String, ScopeProperties> getScopes() {
    return scopes;
  }

  /**
   * Returns the metrics settings.
   *
   * @return the metrics settings
   */
  public Metrics getMetrics() {
    return metrics;
  }

  /** Which store keeps the keys. */
  public enum StoreType {
    /** In this JVM only; lost on restart. */
    MEMORY,
    /** Embedded and durable, in a directory. */
    ROCKSDB,
    /** Shared by every instance: the application's Lettuce connection factory or a URL. */
    REDIS,
    /** Shared by every instance: the application's DataSource or a JDBC URL. */
    JDBC
  }

  /** The store settings ({@code idem.store.*}). */
  public static class Store {
    /** Which store keeps the keys: memory, rocksdb, redis or jdbc. */
    private StoreType type = StoreType.MEMORY;

    private final Memory memory = new Memory();
    private final RocksDb rocksdb = new RocksDb();
    private final Redis redis = new Redis();
    private final Jdbc jdbc = new Jdbc();

    /** Creates the defaults. */
    public Store() {}

    /**
     * Returns the store type.
     *
     * @return the store type (default memory)
     */
    public StoreType getType() {
      return type;
    }

    /**
     * Sets the store type.
     *
     * @param type memory, rocksdb, redis or jdbc
     */
    public void setType(StoreType type) {
      this.type = type;
    }

    /**
     * Returns the memory store's settings.
     *
     * @return the settings
     */
    public Memory getMemory() {
      return memory;
    }

    /**
     * Returns the RocksDB store's settings.
     *
     * @return the settings
     */
    public RocksDb getRocksdb() {
      return rocksdb;
    }

    /**
     * Returns the Redis store's settings.
     *
     * @return the settings
     */
    public Redis getRedis() {
      return redis;
    }

    /**
     * Returns the JDBC store's settings.
     *
     * @return the settings
     */
    public Jdbc getJdbc() {
      return jdbc;
    }
  }

  /** The memory store ({@code idem.store.memory.*}). */
  public static class Memory {
    /** Bound on committed keys per scope in the memory store; the least recently used go first. */
    private @Nullable Integer maxKeysPerScope;

    /** Creates the defaults. */
    public Memory() {}

    /**
     * Returns the bound on committed keys per scope (least recently used go first).
     *
     * @return the bound, or null for the store's default
     */
    public @Nullable Integer getMaxKeysPerScope() {
      return maxKeysPerScope;
    }

    /**
     * Sets the bound on committed keys per scope.
     *
     * @param maxKeysPerScope at least 1
     */
    public void setMaxKeysPerScope(@Nullable Integer maxKeysPerScope) {
      this.maxKeysPerScope = maxKeysPerScope;
    }
  }

  /** The RocksDB store ({@code idem.store.rocksdb.*}). */
  public static class RocksDb {
    /** Directory of the RocksDB database. */
    private Path path = Path.of("data", "idem");

    /** Creates the defaults. */
    public RocksDb() {}

    /**
     * Returns the directory of the database.
     *
     * @return the directory (default {@code data/idem})
     */
    public Path getPath() {
      return path;
    }

    /**
     * Sets the directory of the database.
     *
     * @param path the directory
     */
    public void setPath(Path path) {
      this.path = path;
    }
  }

  /** The Redis store ({@code idem.store.redis.*}). */
  public static class Redis {
    /** Redis URL; when unset, the server of the application's Lettuce connection factory. */
    private @Nullable String url;

    /** Prefix of every Redis key the store writes. */
    private String prefix = "idem:";

    /** Creates the defaults. */
    public Redis() {}

    /**
     * Returns the Redis URL; when unset, the application's Lettuce connection factory's server is
     * used.
     *
     * @return the URL, e.g. {@code redis://127.0.0.1:6379}, or null
     */
    public @Nullable String getUrl() {
      return url;
    }

    /**
     * Sets the Redis URL.
     *
     * @param url the URL
     */
    public void setUrl(@Nullable String url) {
      this.url = url;
    }

    /**
     * Returns the prefix of every key the store writes.
     *
     * @return the prefix (default {@code idem:})
     */
    public String getPrefix() {
      return prefix;
    }

    /**
     * Sets the prefix of every key the store writes.
     *
     * @param prefix the prefix
     */
    public void setPrefix(String prefix) {
      this.prefix = prefix;
    }
  }

  /** The JDBC store ({@code idem.store.jdbc.*}). */
  public static class Jdbc {
    /** JDBC URL; when unset, the application's DataSource. */
    private @Nullable String url;

    /** Prefix of the JDBC store's table names. */
    private String tablePrefix = "idem_";

    /** Whether the JDBC store creates its tables at start-up if they are missing. */
    private boolean createSchema = true;

    /** Creates the defaults. */
    public Jdbc() {}

    /**
     * Returns the JDBC URL; when unset, the application's {@code DataSource} is used.
     *
     * @return the URL, or null
     */
    public @Nullable String getUrl() {
      return url;
    }

    /**
     * Sets the JDBC URL.
     *
     * @param url the URL
     */
    public void setUrl(@Nullable String url) {
      this.url = url;
    }

    /**
     * Returns the prefix of the store's table names.
     *
     * @return the prefix (default {@code idem_})
     */
    public String getTablePrefix() {
      return tablePrefix;
    }

    /**
     * Sets the prefix of the store's table names.
     *
     * @param tablePrefix the prefix
     */
    public void setTablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
    }

    /**
     * Returns whether the store creates its tables at start-up if they are missing.
     *
     * @return true by default
     */
    public boolean isCreateSchema() {
      return createSchema;
    }

    /**
     * Sets whether the store creates its tables at start-up.
     *
     * @param createSchema true to create missing tables
     */
    public void setCreateSchema(boolean createSchema) {
      this.createSchema = createSchema;
    }
  }

  /** One scope ({@code idem.scopes.<name>.*}). */
  public static class ScopeProperties {
    /** How long a committed key suppresses duplicates. */
    private @Nullable Duration ttl = DedupConfig.DEFAULT_TTL;

    /** Whether a duplicate refreshes the window (sliding) or not (fixed). */
    private Expiry expiry = Expiry.SLIDING;

    /** How long a crashed holder can block a key. */
    private Duration lease = DedupConfig.DEFAULT_LEASE;

    /** Creates the defaults (24 h sliding window, 5 min lease). */
    public ScopeProperties() {}

    /**
     * Returns how long a committed key suppresses duplicates.
     *
     * @return the window (default 24h)
     */
    public @Nullable Duration getTtl() {
      return ttl;
    }

    /**
     * Sets how long a committed key suppresses duplicates.
     *
     * @param ttl the window, e.g. {@code 24h}
     */
    public void setTtl(@Nullable Duration ttl) {
      this.ttl = ttl;
    }

    /**
     * Returns whether a duplicate refreshes the window.
     *
     * @return sliding (default) or fixed
     */
    public Expiry getExpiry() {
      return expiry;
    }

    /**
     * Sets whether a duplicate refreshes the window.
     *
     * @param expiry sliding or fixed
     */
    public void setExpiry(Expiry expiry) {
      this.expiry = expiry;
    }

    /**
     * Returns how long a crashed holder can block a key.
     *
     * @return the lease (default 5m)
     */
    public Duration getLease() {
      return lease;
    }

    /**
     * Sets how long a crashed holder can block a key.
     *
     * @param lease the lease, e.g. {@code 30s}
     */
    public void setLease(Duration lease) {
      this.lease = lease;
    }

    /**
     * Returns the immutable config these properties describe.
     *
     * @return the config
     * @throws dev.idem.IdemConfigException if a value is out of range
     */
    public DedupConfig toConfig() {
      DedupConfig.Builder b = DedupConfig.custom().expiry(expiry).lease(lease);
      return (ttl == null ? b.noTtl() : b.ttl(ttl)).build();
    }
  }

  /** Metrics ({@code idem.metrics.*}). */
  public static class Metrics {
    /** Whether decisions are counted in Micrometer when a MeterRegistry exists. */
    private boolean enabled = true;

    /** Creates the defaults. */
    public Metrics() {}

    /**
     * Returns whether decisions are counted in Micrometer (when a MeterRegistry exists).
     *
     * @return true by default
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether decisions are counted in Micrometer.
     *
     * @param enabled true to count
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }
}
