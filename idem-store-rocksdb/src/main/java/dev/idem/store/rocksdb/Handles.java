package dev.idem.store.rocksdb;

import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Cache;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.CompactionStyle;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.IndexType;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Status;
import org.rocksdb.WALRecoveryMode;
import org.rocksdb.WriteOptions;

/**
 * Opens the database with Idem's column families and tuning, owns every native object, and closes
 * them in order. Also maps {@link RocksDBException} to Idem's exceptions.
 */
final class Handles {
  static final int FORMAT_VERSION = 1;
  static final byte[] META_FORMAT = ascii("idem.format");
  static final byte[] META_OUTBOX_ID_LIMIT = ascii("idem.outbox.id-limit");
  static final byte[] META_HEALTH = ascii("idem.health");

  /**
   * Obsolete WAL files kept for reuse. The small column families (meta, outbox) keep every WAL
   * since their oldest unflushed write alive until the WAL reaches {@code maxTotalWalSize} (256
   * MiB), and then RocksDB frees about that much at once: 8 files of about a memtable (32 MiB) each
   * hold what is freed, so the next 256 MiB of WAL are all written into recycled files. The disk
   * they take is what the WAL may take anyway, kept instead of freed and taken again.
   */
  static final int RECYCLED_WAL_FILES = 8;

  static final String CF_DEFAULT = "default";
  static final String CF_ENTRIES = "entries";
  static final String CF_EXPIRY = "expiry";
  static final String CF_OUTBOX = "outbox";
  static final String CF_DEAD_LETTERS = "dead_letters";
  static final List<String> FAMILIES =
      List.of(CF_DEFAULT, CF_ENTRIES, CF_EXPIRY, CF_OUTBOX, CF_DEAD_LETTERS);

  final RocksDB db;
  final ColumnFamilyHandle meta;
  final ColumnFamilyHandle entries;
  final ColumnFamilyHandle expiry;
  final ColumnFamilyHandle outbox;
  final ColumnFamilyHandle deadLetters;
  final Writer writer;
  final long outboxIdLimit;
  private final List<ColumnFamilyHandle> families;
  private final List<AutoCloseable> owned;

  private Handles(
      RocksDB db,
      List<ColumnFamilyHandle> families,
      Writer writer,
      long outboxIdLimit,
      List<AutoCloseable> owned) {
    this.db = db;
    this.families = families;
    this.meta = families.get(0);
    this.entries = families.get(1);
    this.expiry = families.get(2);
    this.outbox = families.get(3);
    this.deadLetters = families.get(4);
    this.writer = writer;
    this.outboxIdLimit = outboxIdLimit;
    this.owned = owned;
  }

  static Handles open(RocksDbStoreConfig config) {
    Path dir = config.directory();
    String store = "rocksdb:" + dir;
    loadLibrary(store);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new StoreException(
          store + ": cannot create the directory (" + e + "); create it or fix its permissions", e);
    }
    List<AutoCloseable> owned = new ArrayList<>();
    List<ColumnFamilyHandle> families = new ArrayList<>();
    RocksDB db = null;
    try {
      boolean existed = checkFamilies(store, dir);
      // Half the cache is kept for index and filter blocks (inserted with high priority below),
      // so a scan or a burst of data reads cannot push out what every look-up needs.
      Cache cache = own(owned, new LRUCache(config.blockCacheBytes(), -1, false, 0.5));
      // 10 bits per key: about 1% false positives, so a reserve of a new key (the common case)
      // almost never reads a data block.
      BloomFilter bloom = own(owned, new BloomFilter(10));
      // Filters and indexes are partitioned into blocks of about 4 KiB, each cached on its own,
      // under a small top-level index pinned in the cache. Whole, a large table's filter (10 bits
      // per key: about 750 KiB for 600,000 keys) outgrows a shard of the cache (64 shards of 1 MiB
      // at the default 64 MiB), is never kept, and every look-up read it from the file again: the
      // service on RocksDB fell to a quarter of its rate after its first large compaction
      // (docs/BENCHMARKS.md, FilterBlockCacheTest).
      BlockBasedTableConfig entryTable =
          partitioned(cache)
              .setFilterPolicy(bloom)
              .setWholeKeyFiltering(true)
              .setPartitionFilters(true)
              .setOptimizeFiltersForMemory(true);
      BlockBasedTableConfig plainTable = partitioned(cache);

      List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
      descriptors.add(
          new ColumnFamilyDescriptor(
              RocksDB.DEFAULT_COLUMN_FAMILY,
              own(owned, small(new ColumnFamilyOptions(), plainTable, 4L << 20))));
      ColumnFamilyOptions entryOptions =
          own(owned, new ColumnFamilyOptions())
              .setTableFormatConfig(entryTable)
              .setCompactionStyle(CompactionStyle.LEVEL)
              .setLevelCompactionDynamicLevelBytes(true)
              .setWriteBufferSize(32L << 20)
              .setMaxWriteBufferNumber(3)
              // A memtable bloom filter: lookups of new keys skip the memtable's skiplist search.
              .setMemtablePrefixBloomSizeRatio(0.05)
              .setMemtableWholeKeyFiltering(true)
              .setCompressionType(CompressionType.LZ4_COMPRESSION)
              .setBottommostCompressionType(CompressionType.ZSTD_COMPRESSION);
      descriptors.add(new ColumnFamilyDescriptor(ascii(CF_ENTRIES), entryOptions));
      ColumnFamilyOptions expiryOptions =
          own(owned, new ColumnFamilyOptions())
              .setTableFormatConfig(plainTable)
              .setCompactionStyle(CompactionStyle.LEVEL)
              .setLevelCompactionDynamicLevelBytes(true)
              .setWriteBufferSize(16L << 20)
              .setMaxWriteBufferNumber(3)
              .setCompressionType(CompressionType.LZ4_COMPRESSION)
              .setBottommostCompressionType(CompressionType.ZSTD_COMPRESSION);
      descriptors.add(new ColumnFamilyDescriptor(ascii(CF_EXPIRY), expiryOptions));
      descriptors.add(
          new ColumnFamilyDescriptor(
              ascii(CF_OUTBOX),
              own(owned, small(new ColumnFamilyOptions(), plainTable, 16L << 20))));
      descriptors.add(
          new ColumnFamilyDescriptor(
              ascii(CF_DEAD_LETTERS),
              own(owned, small(new ColumnFamilyOptions(), plainTable, 4L << 20))));

      DBOptions options =
          own(owned, new DBOptions())
              .setCreateIfMissing(true)
              .setCreateMissingColumnFamilies(true)
              .setMaxBackgroundJobs(
                  Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors())))
              .setBytesPerSync(1L << 20)
              // Writers that meet in RocksDB's write queue (a group commit's batch, sliding
              // refreshes, outbox bookkeeping) wait for the queue's leader without spinning on
              // sched_yield (up to 100 µs each by default), which on a machine with few cores
              // takes the core from the very thread they wait for; and the leader inserts the
              // whole group into the memtables itself instead of waking every follower to insert
              // its own part (one more wake-up and wait per follower).
              .setEnableWriteThreadAdaptiveYield(false)
              .setAllowConcurrentMemtableWrite(false)
              // Several column families share the WAL; a small one (outbox, meta) must not pin old
              // WAL files forever: past this size, RocksDB flushes the families that hold them.
              .setMaxTotalWalSize(256L << 20)
              // A crash can leave a torn record at the WAL's tail (never a synced one): recover up
              // to it, as the durability modes document.
              .setWalRecoveryMode(WALRecoveryMode.PointInTimeRecovery)
              // Reuse obsolete WAL files instead of deleting them: a write into a recycled file
              // overwrites blocks that are already allocated and written, so its sync is a data
              // sync only, where an append to a new (or fallocated, "unwritten") file also makes
              // the file system journal the size or extent change on every sync. Each record
              // carries its log number, so recovery tells a recycled file's old records from new
              // ones; RocksDB supports this with point-in-time recovery since 9.1
              // (facebook/rocksdb#12403). RocksDbCrashTest pins it under SIGKILL.
              .setRecycleLogFileNum(RECYCLED_WAL_FILES)
              .setInfoLogLevel(InfoLogLevel.INFO_LEVEL)
              .setKeepLogFileNum(3)
              .setMaxLogFileSize(8L << 20)
              .setAvoidFlushDuringShutdown(false);

      try {
        db = RocksDB.open(options, dir.toString(), descriptors, families);
      } catch (RocksDBException e) {
        throw openFailure(store, e);
      }
      long idLimit;
      try (WriteOptions synced = new WriteOptions().setSync(true)) {
        checkFormat(store, db, families.get(0), existed, synced);
        byte[] limit = db.get(families.get(0), META_OUTBOX_ID_LIMIT);
        idLimit = limit == null ? 0 : Bytes.getLong(limit, 0);
      } catch (RocksDBException e) {
        throw failure(store, "open", e, false);
      }
      Writer writer = new Writer(db, config.durability(), config.groupCommitMaxDelay().toNanos());
      return new Handles(db, families, writer, idLimit, owned);
    } catch (RuntimeException e) {
      for (ColumnFamilyHandle h : families) {
        h.close();
      }
      if (db != null) {
        db.close();
      }
      closeAll(owned);
      throw e;
    }
  }

  /** A table format with a partitioned index, its top level pinned; see {@link #open}. */
  private static BlockBasedTableConfig partitioned(Cache cache) {
    return new BlockBasedTableConfig()
        .setBlockCache(cache)
        .setIndexType(IndexType.kTwoLevelIndexSearch)
        .setMetadataBlockSize(4096)
        .setCacheIndexAndFilterBlocks(true)
        .setCacheIndexAndFilterBlocksWithHighPriority(true)
        .setPinTopLevelIndexAndFilter(true)
        .setPinL0FilterAndIndexBlocksInCache(true);
  }

  private static ColumnFamilyOptions small(
      ColumnFamilyOptions options, BlockBasedTableConfig table, long writeBuffer) {
    return options
        .setTableFormatConfig(table)
        .setWriteBufferSize(writeBuffer)
        .setCompressionType(CompressionType.LZ4_COMPRESSION);
  }

  private static void loadLibrary(String store) {
    try {
      RocksDB.loadLibrary();
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      throw new StoreException(
          store
              + ": cannot load RocksDB's native library ("
              + e
              + "). The rocksdbjni jar carries it for Linux (x86-64, aarch64, glibc and musl), "
              + "macOS and Windows; on other platforms use another store.",
          e);
    }
  }

  /**
   * Refuses a directory holding column families Idem does not know; returns whether a DB exists.
   */
  private static boolean checkFamilies(String store, Path dir) {
    if (!Files.exists(dir.resolve("CURRENT"))) {
      return false;
    }
    List<byte[]> found;
    try (Options options = new Options()) {
      found = RocksDB.listColumnFamilies(options, dir.toString());
    } catch (RocksDBException e) {
      throw failure(store, "open (listing column families)", e, false);
    }
    List<String> unknown = new ArrayList<>();
    for (byte[] name : found) {
      String text = new String(name, StandardCharsets.UTF_8);
      if (!FAMILIES.contains(text)) {
        unknown.add(text);
      }
    }
    if (!unknown.isEmpty()) {
      throw new StoreException(
          store
              + " holds a RocksDB database that is not an Idem store (unknown column families "
              + unknown
              + "); point the store at an empty or Idem-owned directory");
    }
    return true;
  }

  private static void checkFormat(
      String store, RocksDB db, ColumnFamilyHandle meta, boolean existed, WriteOptions synced)
      throws RocksDBException {
    byte[] format = db.get(meta, META_FORMAT);
    if (format == null) {
      if (existed) {
        try (RocksIterator it = db.newIterator(meta)) {
          it.seekToFirst();
          if (it.isValid()) {
            throw new StoreException(
                store
                    + " holds a RocksDB database without Idem's format marker (another program's"
                    + " data); point the store at an empty or Idem-owned directory");
          }
        }
      }
      db.put(meta, synced, META_FORMAT, new byte[] {FORMAT_VERSION});
      return;
    }
    if (format.length != 1 || format[0] != FORMAT_VERSION) {
      throw new StoreException(
          store
              + " was written in Idem RocksDB format "
              + (format.length == 1 ? Integer.toString(format[0]) : "(unreadable)")
              + "; this Idem reads format "
              + FORMAT_VERSION
              + ". Open it with the Idem version that wrote it.");
    }
  }

  private static RuntimeException openFailure(String store, RocksDBException e) {
    String message = String.valueOf(e.getMessage());
    if (message.contains("LOCK") || message.contains("lock hold")) {
      return new StoreException(
          store
              + " is already open: another store in this process or in another process (a second"
              + " `idem serve` on the same path?) holds its LOCK file. Close the other store first,"
              + " or give this one its own directory (store.path). RocksDB said: "
              + message,
          e);
    }
    return failure(store, "open", e, false);
  }

  /** Maps a RocksDB error: I/O trouble and busy states are retryable, the rest are not. */
  static RuntimeException failure(String store, String op, RocksDBException e, boolean wrote) {
    Status status = e.getStatus();
    Status.Code code = status == null ? Status.Code.IOError : status.getCode();
    String what = store + ": " + op + " failed: " + e.getMessage();
    if (isUnavailable(code)) {
      return new StoreUnavailableException(
          store,
          wrote,
          what
              + ". Check the disk (free space, permissions, health); RocksDB stops accepting writes"
              + " after a failed sync until the store is reopened.",
          e);
    }
    if (code == Status.Code.Corruption) {
      return new StoreException(
          what
              + ". The database is corrupt: restore the directory from a backup, or move it away"
              + " to start empty.",
          e);
    }
    return new StoreException(what, e);
  }

  static boolean isUnavailable(Status.Code code) {
    return switch (code) {
      case IOError,
          Busy,
          TimedOut,
          TryAgain,
          Incomplete,
          ShutdownInProgress,
          Aborted,
          Expired,
          MergeInProgress ->
          true;
      default -> false;
    };
  }

  /** Flushes and compacts every column family down to the bottommost level. */
  void compactAll() throws RocksDBException {
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true);
        CompactRangeOptions full =
            new CompactRangeOptions()
                .setBottommostLevelCompaction(
                    CompactRangeOptions.BottommostLevelCompaction.kForceOptimized)) {
      db.flush(flush, families);
      for (ColumnFamilyHandle family : families) {
        db.compactRange(family, null, null, full);
      }
    }
  }

  /**
   * Flushes the memtables, then closes the column families, the database and the options, in that
   * order.
   */
  void close(String store) {
    RocksDBException error = null;
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true).setAllowWriteStall(true)) {
      db.flush(flush, families);
    } catch (RocksDBException e) {
      System.getLogger(Handles.class.getName())
          .log(
              System.Logger.Level.WARNING,
              store + ": flush on close failed; the WAL keeps the data",
              e);
    }
    writer.close();
    for (ColumnFamilyHandle h : families) {
      h.close();
    }
    try {
      db.closeE();
    } catch (RocksDBException e) {
      error = e;
    }
    closeAll(owned);
    if (error != null) {
      throw new StoreException(store + ": close failed: " + error.getMessage(), error);
    }
  }

  private static <T extends AutoCloseable> T own(List<AutoCloseable> owned, T resource) {
    owned.add(resource);
    return resource;
  }

  private static void closeAll(List<AutoCloseable> owned) {
    for (int i = owned.size() - 1; i >= 0; i--) {
      try {
        owned.get(i).close();
      } catch (Exception e) {
        // Releasing native memory does not fail in practice; nothing useful to do if it does.
      }
    }
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
