package dev.idem.server.config;

import java.util.Locale;

/** The kinds of store the service can keep keys in ({@code store.type}). */
public enum StoreType implements ConfigName {
  /** Embedded, durable, under a local directory: the default. Has an outbox. */
  ROCKSDB,
  /** In the process's memory, bounded per pipeline; lost on restart. Has a (non-durable) outbox. */
  MEMORY,
  /**
   * A Redis server shared by many instances. Has an outbox (on a Redis Cluster only with a hash tag
   * in the prefix).
   */
  REDIS,
  /** A PostgreSQL, MariaDB or H2 database shared by many instances. Has an outbox. */
  JDBC;

  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Returns whether several service instances can share this kind of store (then ordering takes a
   * lock in it, not only in the instance).
   *
   * @return true for redis and jdbc
   */
  public boolean shared() {
    return this == REDIS || this == JDBC;
  }

  /**
   * Returns whether this kind of store also keeps an outbox, which {@code deliver.mode: async}
   * needs.
   *
   * @return true for every kind (a Redis Cluster also needs a hash tag in the prefix)
   */
  public boolean hasOutbox() {
    return true;
  }
}
