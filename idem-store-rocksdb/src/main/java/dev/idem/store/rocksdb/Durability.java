package dev.idem.store.rocksdb;

/**
 * When a write (a commit, forget, clear, an outbox append or acknowledgement) counts as done, and
 * so what a crash can take back. In-flight reservations are never written in any mode: they live in
 * the process's memory and die with it, so a restart starts with none.
 *
 * <p>Every write first goes to RocksDB's write-ahead log (WAL); the modes differ only in whether,
 * and how, the WAL is forced to the disk ({@code fdatasync}) before the call returns. A <em>process
 * crash</em> (SIGKILL, an OOM kill, a JVM abort) keeps everything the operating system already
 * holds, so every mode survives it. A <em>power failure</em> or kernel panic loses whatever the
 * operating system had not yet written to the disk.
 */
public enum Durability {

  /**
   * Each write is a synced write: it returns after its own WAL sync. Loses nothing that returned,
   * on a process crash or a power failure. The slowest mode with one writer (one {@code fdatasync}
   * per call, a few thousand per second on common SSDs); concurrent writers may still share a sync
   * through RocksDB's own write grouping.
   */
  FSYNC,

  /**
   * The default. Concurrent writers hand their write batches to one leader, which writes them
   * together and syncs the WAL once for all; each call returns after the sync that covers its
   * write. Loses nothing that returned, on a process crash or a power failure, like {@link #FSYNC};
   * a call waits at most the group-commit delay plus two syncs (the one in progress, then its own
   * group's), and many writers share one sync.
   */
  GROUP_COMMIT,

  /**
   * Writes go to the WAL in the operating system's page cache and are never synced by the store
   * (the operating system writes them out within seconds). Survives a process crash with nothing
   * lost; a power failure or kernel panic can lose the writes of the last seconds, including
   * commits that returned, so a redelivered event may then pass as new. For caches, tests, or disks
   * with a power-loss-protected write cache.
   */
  OS_BUFFERED
}
