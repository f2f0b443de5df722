package dev.idem.store.rocksdb;

import dev.idem.IdemConfigException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The settings of a {@link RocksDbDedupStore}, validated when constructed. Immutable; build it with
 * {@link RocksDbDedupStore#builder(Path)} or start from {@link #ofDefaults(Path)}.
 *
 * @param directory the directory holding the database; created if missing, and owned by one process
 *     at a time
 * @param durability when a write counts as done (default {@link Durability#GROUP_COMMIT})
 * @param groupCommitMaxDelay under {@link Durability#GROUP_COMMIT}, the longest a group's leader
 *     waits for writers that are about to join before it syncs; {@link Duration#ZERO} syncs at once
 *     (the default). Bounds the extra latency of a write: it waits at most this plus the sync in
 *     progress and its own group's sync. At most 1 s
 * @param sweepInterval how often the background sweeper removes expired entries; {@link
 *     Duration#ZERO} runs no sweeper (call {@link RocksDbDedupStore#sweepExpired(long)} yourself).
 *     Default 10 s; at least 10 ms when set
 * @param sweepBatchSize how many expiry-index entries one sweep step reads before it removes them
 *     (bounds the sweeper's memory and how long it holds an iterator). Default 1,000; 1 to 100,000
 * @param blockCacheBytes the size of the shared block cache (data, index and filter blocks of all
 *     column families). Default 64 MiB; at least 1 MiB
 */
public record RocksDbStoreConfig(
    Path directory,
    Durability durability,
    Duration groupCommitMaxDelay,
    Duration sweepInterval,
    int sweepBatchSize,
    long blockCacheBytes) {

  /**
   * The default group-commit delay bound: zero. A leader syncs at once; writers that arrive during
   * its sync form the next group. On a busy 2-core machine, waiting for writers that are about to
   * join did not reliably help (they often could not get a core in time); on machines with idle
   * cores a delay of some 100 µs can form larger groups.
   */
  public static final Duration DEFAULT_GROUP_COMMIT_MAX_DELAY = Duration.ZERO;

  /** The default sweep interval: 10 s. */
  public static final Duration DEFAULT_SWEEP_INTERVAL = Duration.ofSeconds(10);

  /** The default sweep batch: 1,000 index entries. */
  public static final int DEFAULT_SWEEP_BATCH_SIZE = 1_000;

  /** The default block cache: 64 MiB. */
  public static final long DEFAULT_BLOCK_CACHE_BYTES = 64L << 20;

  /**
   * Validates the settings.
   *
   * @throws IdemConfigException naming the field, the value and what is allowed
   */
  public RocksDbStoreConfig {
    if (directory == null) {
      throw new IdemConfigException("rocksdb directory must be set (store.path, e.g. ./data)");
    }
    directory = directory.toAbsolutePath().normalize();
    if (durability == null) {
      throw new IdemConfigException(
          "rocksdb durability must be set: one of FSYNC, GROUP_COMMIT, OS_BUFFERED");
    }
    if (groupCommitMaxDelay == null
        || groupCommitMaxDelay.isNegative()
        || groupCommitMaxDelay.compareTo(Duration.ofSeconds(1)) > 0) {
      throw new IdemConfigException(
          "rocksdb groupCommitMaxDelay "
              + groupCommitMaxDelay
              + " is not allowed: use 0 (sync at once, the default) up to 1s");
    }
    if (sweepInterval == null
        || sweepInterval.isNegative()
        || (!sweepInterval.isZero() && sweepInterval.compareTo(Duration.ofMillis(10)) < 0)) {
      throw new IdemConfigException(
          "rocksdb sweepInterval "
              + sweepInterval
              + " is not allowed: use at least 10ms, or 0 to run no background sweeper");
    }
    if (sweepBatchSize < 1 || sweepBatchSize > 100_000) {
      throw new IdemConfigException(
          "rocksdb sweepBatchSize " + sweepBatchSize + " is not allowed: use 1 to 100000");
    }
    if (blockCacheBytes < (1L << 20)) {
      throw new IdemConfigException(
          "rocksdb blockCacheBytes "
              + blockCacheBytes
              + " is not allowed: use at least 1 MiB (1048576); the default is 64 MiB");
    }
  }

  /**
   * Returns the default settings for a directory.
   *
   * @param directory the database directory
   * @return group commit syncing at once, a sweep every 10 s in batches of 1,000, a 64 MiB block
   *     cache
   */
  public static RocksDbStoreConfig ofDefaults(Path directory) {
    return new RocksDbStoreConfig(
        directory,
        Durability.GROUP_COMMIT,
        DEFAULT_GROUP_COMMIT_MAX_DELAY,
        DEFAULT_SWEEP_INTERVAL,
        DEFAULT_SWEEP_BATCH_SIZE,
        DEFAULT_BLOCK_CACHE_BYTES);
  }
}
