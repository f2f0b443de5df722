package dev.idem.server.config;

/** When a RocksDB write counts as done ({@code store.durability}); see the RocksDB store's docs. */
public enum RocksDbDurability implements ConfigName {
  /** Each write syncs the write-ahead log before it returns. */
  FSYNC,
  /** Concurrent writes share one write-ahead-log sync; each returns after it (the default). */
  GROUP_COMMIT,
  /** Writes are left to the operating system; a power failure can lose the last seconds. */
  OS_BUFFERED;

  @Override
  public String configName() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
