package dev.idem.kafka.state;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The dedup state of one input partition: the {@link DedupStateMachine} applied under one lock to
 * one RocksDB column family, every change also sent to the changelog partition of the same number
 * (a put for an entry, a tombstone for a removal). Durable through the changelog, not through the
 * local files (which are a cache that a new owner rebuilds): a change is durable once {@link
 * PartitionedDedupState#flush()} has returned.
 */
final class PartitionStore implements DedupStore {
  /** Where changes go: the changelog producer. */
  interface Changelog {
    void send(int partition, byte[] key, byte @Nullable [] value);
  }

  private final RocksDB db;
  private final ColumnFamilyHandle cf;
  private final WriteOptions writes;
  private final int partition;
  private final Changelog changelog;
  private final String name;
  private boolean closed;

  PartitionStore(
      RocksDB db,
      ColumnFamilyHandle cf,
      WriteOptions writes,
      int partition,
      Changelog changelog,
      String name) {
    this.db = db;
    this.cf = cf;
    this.writes = writes;
    this.partition = partition;
    this.changelog = changelog;
    this.name = name;
  }

  int partition() {
    return partition;
  }

  ColumnFamilyHandle columnFamily() {
    return cf;
  }

  /** Applies one changelog record during a restore (no changelog write). */
  synchronized void restore(byte[] key, byte @Nullable [] value) {
    try {
      if (value == null) {
        db.delete(cf, writes, key);
      } else {
        db.put(cf, writes, key, value);
      }
    } catch (RocksDBException e) {
      throw unavailable("restore", e);
    }
  }

  /** Applies changelog records during a restore in one write batch (no changelog write). */
  synchronized void restoreAll(List<ConsumerRecord<byte[], byte[]>> records) {
    try (WriteBatch batch = new WriteBatch()) {
      for (ConsumerRecord<byte[], byte[]> r : records) {
        if (r.value() == null) {
          batch.delete(cf, r.key());
        } else {
          batch.put(cf, r.key(), r.value());
        }
      }
      db.write(writes, batch);
    } catch (RocksDBException e) {
      throw unavailable("restore", e);
    }
  }

  @Override
  public synchronized ReserveResult reserve(ReserveRequest r) {
    byte[] k = ChangelogCodec.key(r.scope(), r.key());
    Transition<ReserveResult> t = DedupStateMachine.reserve(read(k), r);
    apply(k, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult commit(CommitRequest c) {
    byte[] k = ChangelogCodec.key(c.scope(), c.key());
    Transition<SettleResult> t = DedupStateMachine.commit(read(k), c);
    apply(k, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult release(ReleaseRequest r) {
    byte[] k = ChangelogCodec.key(r.scope(), r.key());
    Transition<SettleResult> t = DedupStateMachine.release(read(k), r);
    apply(k, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult extend(ExtendRequest e) {
    byte[] k = ChangelogCodec.key(e.scope(), e.key());
    Transition<SettleResult> t = DedupStateMachine.extend(read(k), e);
    apply(k, t);
    return t.answer();
  }

  @Override
  public synchronized KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    return DedupStateMachine.inspect(read(ChangelogCodec.key(scope, key)), nowMillis);
  }

  @Override
  public synchronized boolean forget(Scope scope, DedupKey key) {
    byte[] k = ChangelogCodec.key(scope, key);
    if (read(k) == null) {
      return false;
    }
    write(k, null);
    return true;
  }

  @Override
  public synchronized long clear(Scope scope) {
    byte[] prefix = ChangelogCodec.scopePrefix(scope);
    long n = 0;
    try (RocksIterator it = db.newIterator(cf)) {
      for (it.seek(prefix); it.isValid() && startsWith(it.key(), prefix); it.next()) {
        write(it.key(), null);
        n++;
      }
    }
    return n;
  }

  @Override
  public synchronized long sweepExpired(long nowMillis) {
    checkOpen();
    long n = 0;
    try (RocksIterator it = db.newIterator(cf)) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        StoredEntry e = ChangelogCodec.entry(it.value());
        if (e != null && e.isDeadAt(nowMillis)) {
          write(it.key(), null);
          n++;
        }
      }
    }
    return n;
  }

  /** Counts the entries (dead or alive), for tests and restore statistics. */
  synchronized long size() {
    checkOpen();
    long n = 0;
    try (RocksIterator it = db.newIterator(cf)) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        n++;
      }
    }
    return n;
  }

  @Override
  public StoreCapabilities capabilities() {
    return new StoreCapabilities(false, true, false, false);
  }

  @Override
  public String describe() {
    return name;
  }

  /** Closes this view; the owner drops the column family. */
  @Override
  public synchronized void close() {
    closed = true;
  }

  synchronized boolean isClosed() {
    return closed;
  }

  private @Nullable StoredEntry read(byte[] k) {
    checkOpen();
    try {
      return ChangelogCodec.entry(db.get(cf, k));
    } catch (RocksDBException e) {
      throw unavailable("read", e);
    }
  }

  private <A> void apply(byte[] k, Transition<A> t) {
    if (t.changed()) {
      StoredEntry next = t.next();
      write(k, next == null ? null : ChangelogCodec.value(next));
    }
  }

  private void write(byte[] k, byte @Nullable [] value) {
    restore(k, value);
    changelog.send(partition, k, value);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(
          name + " is closed: this consumer no longer owns partition " + partition);
    }
  }

  private StoreUnavailableException unavailable(String what, RocksDBException e) {
    return new StoreUnavailableException(
        name, false, name + ": local RocksDB " + what + " failed: " + e.getMessage(), e);
  }

  private static boolean startsWith(byte[] a, byte[] prefix) {
    return a.length >= prefix.length
        && Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length);
  }
}
