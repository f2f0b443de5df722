package dev.idem.server.config;

import dev.idem.IdemConfigException;
import dev.idem.store.jdbc.JdbcLayout;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where keys are kept: {@code store} for the whole service, or {@code dedup.store} for one
 * pipeline. Two pipelines whose settings are equal share one store instance.
 *
 * @param type the kind of store
 * @param path rocksdb: the directory; else null
 * @param durability rocksdb: when a write counts as done; else null
 * @param url redis: {@code redis://host:port}; jdbc: {@code jdbc:postgresql://...}; else null
 * @param prefix redis: the prefix of every Redis key; jdbc: the prefix of the store's table names;
 *     else null
 * @param username jdbc: the user, if not in the URL; else null
 * @param password jdbc: the password, if not in the URL; else null
 * @param maxKeys memory: the default bound on committed keys per pipeline; else null
 * @param faults timeouts, reconnects, start without the store, outbox claims
 * @param instanceId jdbc: this instance's stable identity among the instances sharing the tables,
 *     so that a restart releases its previous life's outbox claims; null: the machine's host name
 * @param redisLayout redis: how keys are laid out ({@code layout}); null for other stores (redis:
 *     the standard layout)
 * @param compactShards redis with the compact layout: hashes per pipeline ({@code compact_shards});
 *     null: the store's default
 * @param jdbcLayout jdbc: how keys are laid out ({@code layout}: {@code standard} or {@code
 *     partitioned}, PostgreSQL and MariaDB); null for other stores (jdbc: the standard layout)
 */
public record StoreSettings(
    StoreType type,
    @Nullable Path path,
    @Nullable RocksDbDurability durability,
    @Nullable String url,
    @Nullable String prefix,
    @Nullable String username,
    @Nullable String password,
    @Nullable Long maxKeys,
    StoreFaults faults,
    @Nullable String instanceId,
    @Nullable RedisLayout redisLayout,
    @Nullable Integer compactShards,
    @Nullable JdbcLayout jdbcLayout) {

  /** The default RocksDB directory: {@code ./data}. */
  public static final Path DEFAULT_PATH = Path.of("data");

  /** The memory store's default bound per pipeline: 10,000 keys. */
  public static final long DEFAULT_MAX_KEYS = 10_000;

  /** The default Redis key prefix. */
  public static final String DEFAULT_PREFIX = "idem:";

  /** The default JDBC table name prefix. */
  public static final String DEFAULT_TABLE_PREFIX = "idem_";

  /**
   * Validates that each field fits the type.
   *
   * @throws IdemConfigException naming the field
   */
  public StoreSettings {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(faults, "faults");
    if (type == StoreType.ROCKSDB && (path == null || durability == null)) {
      throw new IdemConfigException(
          "path: a rocksdb store needs a directory (e.g. path: ./data) and a durability");
    }
    if ((type == StoreType.REDIS || type == StoreType.JDBC) && (url == null || url.isBlank())) {
      throw new IdemConfigException(
          "url: a "
              + type.configName()
              + " store needs a url (e.g. "
              + (type == StoreType.REDIS
                  ? "redis://127.0.0.1:6379"
                  : "jdbc:postgresql://127.0.0.1:5432/idem")
              + ")");
    }
    if (type == StoreType.REDIS && url != null && !url.matches("(?i)rediss?(-sentinel)?://.*")) {
      throw new IdemConfigException(
          "url: '" + Masking.url(url) + "' is not a Redis URL; use redis://host:port");
    }
    if (type == StoreType.JDBC && url != null && !url.startsWith("jdbc:")) {
      throw new IdemConfigException(
          "url: '" + Masking.url(url) + "' is not a JDBC URL; use jdbc:postgresql://host:port/db");
    }
    if (durability != null && type != StoreType.ROCKSDB) {
      throw new IdemConfigException("durability is only for a rocksdb store");
    }
    if (maxKeys != null && maxKeys < 1) {
      throw new IdemConfigException("max_keys must be at least 1, got " + maxKeys);
    }
    if (instanceId != null && type != StoreType.JDBC) {
      throw new IdemConfigException("instance_id is only for a jdbc store");
    }
    if (instanceId != null && (instanceId.isBlank() || instanceId.length() > 255)) {
      throw new IdemConfigException(
          "instance_id must be 1 to 255 characters and not blank, got '" + instanceId + "'");
    }
    if (redisLayout != null && type != StoreType.REDIS) {
      throw new IdemConfigException("layout is only for a redis store");
    }
    if (jdbcLayout != null && type != StoreType.JDBC) {
      throw new IdemConfigException("a jdbc layout is only for a jdbc store");
    }
    if (compactShards != null && redisLayout != RedisLayout.COMPACT) {
      throw new IdemConfigException(
          "compact_shards is only for a redis store with layout: compact; add layout: compact or"
              + " remove compact_shards");
    }
    if (compactShards != null && (compactShards < 1 || compactShards > 1 << 24)) {
      throw new IdemConfigException(
          "compact_shards must be 1 to 16777216 (about the live keys of a pipeline / 25), got "
              + compactShards);
    }
    if (prefix != null && prefix.isEmpty()) {
      throw new IdemConfigException("prefix must not be empty; omit it for the default");
    }
    if (type == StoreType.JDBC
        && prefix != null
        && !prefix.matches("[A-Za-z_][A-Za-z0-9_]{0,30}")) {
      throw new IdemConfigException(
          "prefix: '"
              + prefix
              + "' is not a table name prefix; use letters, digits and _ (e.g. idem_orders_)");
    }
  }

  /**
   * Creates settings with the default fault handling.
   *
   * @param type the kind of store
   * @param path rocksdb: the directory
   * @param durability rocksdb: when a write counts as done
   * @param url redis, jdbc: the URL
   * @param prefix redis, jdbc: the key or table prefix
   * @param username jdbc: the user
   * @param password jdbc: the password
   * @param maxKeys memory: the default bound per pipeline
   * @throws IdemConfigException naming the field
   */
  public StoreSettings(
      StoreType type,
      @Nullable Path path,
      @Nullable RocksDbDurability durability,
      @Nullable String url,
      @Nullable String prefix,
      @Nullable String username,
      @Nullable String password,
      @Nullable Long maxKeys) {
    this(
        type,
        path,
        durability,
        url,
        prefix,
        username,
        password,
        maxKeys,
        StoreFaults.DEFAULTS,
        null,
        null,
        null,
        null);
  }

  /**
   * Returns the default store: RocksDB under {@code ./data}.
   *
   * @return the default settings
   */
  public static StoreSettings defaults() {
    return new StoreSettings(
        StoreType.ROCKSDB,
        DEFAULT_PATH,
        RocksDbDurability.GROUP_COMMIT,
        null,
        null,
        null,
        null,
        null);
  }

  /**
   * Returns a short description without secrets, e.g. {@code rocksdb:data}.
   *
   * @return the description
   */
  public String describe() {
    return switch (type) {
      case ROCKSDB ->
          "rocksdb:" + path + " (" + Objects.requireNonNull(durability).configName() + ")";
      case MEMORY -> "memory";
      case REDIS, JDBC -> type.configName() + ":" + Masking.url(Objects.requireNonNull(url));
    };
  }

  /** Hides the password. */
  @Override
  public String toString() {
    return "StoreSettings["
        + describe()
        + (prefix == null ? "" : ", prefix=" + prefix)
        + (username == null ? "" : ", username=" + username)
        + (password == null ? "" : ", password=***")
        + (maxKeys == null ? "" : ", maxKeys=" + maxKeys)
        + (instanceId == null ? "" : ", instanceId=" + instanceId)
        + (redisLayout == null ? "" : ", layout=" + redisLayout.configName())
        + (compactShards == null ? "" : ", compactShards=" + compactShards)
        + (jdbcLayout == null ? "" : ", layout=" + jdbcLayout.name().toLowerCase(Locale.ROOT))
        + "]";
  }
}
