package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import dev.idem.store.rocksdb.EntryCodec.MalformedValueException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * A durable {@link DedupStore} and {@link OutboxStore} in an embedded RocksDB database: the
 * service's default store. State survives restarts; under {@link Durability#GROUP_COMMIT} (the
 * default) and {@link Durability#FSYNC}, a key whose {@code commit} returned is never lost, on a
 * process crash or a power failure.
 *
 * <p>Every operation applies {@link DedupStateMachine} under a lock on the key's stripe. In-flight
 * reservations live in memory only, under that lock, with their token and lease: the store is
 * embedded, so every holder of a reservation runs in this process and dies with it, and a process
 * that starts on the directory (after a crash or a restart) starts with no reservations: the retry
 * of an event that was in flight is accepted at once. A reserve of a new key reads the disk (a
 * bloom filter, mostly) and writes nothing; a release writes nothing. A commit writes one RocksDB
 * write batch that stores the committed entry and its expiry-index entry together (and, for {@link
 * #commitAndEnqueue}, the outbox entries), group-committed with other commits, and holds the key's
 * lock until that batch is durable, so under the syncing modes no caller ever sees a commit that a
 * crash could take back. A sliding refresh is written without waiting for a sync (a lost refresh
 * only ends a window at its previous deadline): under group commit it is queued for the next group,
 * and the key's next step waits for that group. A store closed and opened again in the same process
 * keeps the reservations (their holders may still run). Operations on one key are linearizable;
 * operations on different keys run in parallel and share syncs.
 *
 * <p>Expired entries read as absent at once; a background sweeper (one daemon thread) removes them
 * from disk, judging expiry by the configured {@link TimeSource}, and reports each removal to the
 * configured {@link DedupListener#onExpired}.
 *
 * <p>One process owns a directory at a time (RocksDB's {@code LOCK} file): opening a directory that
 * is open elsewhere fails with a {@link StoreException}. After {@link #close()} every operation
 * throws {@link IllegalStateException}, as the SPI says. RocksDB I/O errors and a busy database
 * surface as {@link StoreUnavailableException}; corrupt or foreign data as {@link StoreException}.
 *
 * <p>The on-disk layout, the value formats and their versions are described in {@code
 * docs/stores/rocksdb.md}.
 */
public final class RocksDbDedupStore implements DedupStore, OutboxStore {
  private static final System.Logger LOG = System.getLogger(RocksDbDedupStore.class.getName());

  private static final StoreCapabilities CAPABILITIES =
      new StoreCapabilities(false, true, false, true);
  private static final int STRIPES = 4096;
  private static final int QUEUE_STRIPES = 64;
  private static final long OUTBOX_ID_BLOCK = 1L << 20;
  private static final byte[] EMPTY = new byte[0];
  private static final int CLEAR_BATCH = 1_024;
  private static final long INDEX_GRANULE_MILLIS = 1_000;

  private final RocksDbStoreConfig config;
  private final String description;
  private final TimeSource time;
  private final DedupListener listener;
  private final Handles handles;
  private final RocksDB db;
  private final ColumnFamilyHandle meta;
  private final ColumnFamilyHandle entries;
  private final ColumnFamilyHandle expiry;
  private final ColumnFamilyHandle outbox;
  private final ColumnFamilyHandle deadLetters;
  private final Writer writer;
  private final ReentrantLock[] stripes = newLocks(STRIPES);
  private final Reservations reservations;
  private final ReentrantLock[] queueLocks = newLocks(QUEUE_STRIPES);
  private final ReentrantLock sweepLock = new ReentrantLock();
  private final ConcurrentHashMap<Scope, ScopeKeys> scopes = new ConcurrentHashMap<>();

  /**
   * The entry keys whose commit was queued by {@link #commitAsync} and is not yet durable (or
   * failed), each with the commit's future, and those with a queued sliding refresh ({@link
   * #queueRefresh}), each with a marker. A step on such a key waits for its group first, under the
   * key's lock ({@link #awaitQueuedCommit}), as it would wait for the lock held by a synchronous
   * commit: so nothing reads a commit that a power failure could still undo, nor a deadline that a
   * queued refresh is about to move. Removed by the group-commit leader after the sync, without the
   * key's lock.
   */
  private final ConcurrentHashMap<ByteBuffer, Object> committing = new ConcurrentHashMap<>();

  private final LongAdder active = new LongAdder();
  private final Object lifecycle = new Object();
  private final AtomicLong outboxSeq;
  private final Object outboxIdLock = new Object();
  private volatile long outboxIdLimit;
  private volatile boolean closed;
  private @Nullable ScheduledExecutorService sweeper;

  private RocksDbDedupStore(
      RocksDbStoreConfig config, TimeSource time, DedupListener listener, Handles handles) {
    this.config = config;
    this.description = "rocksdb:" + config.directory();
    this.time = time;
    this.listener = listener;
    this.handles = handles;
    this.db = handles.db;
    this.meta = handles.meta;
    this.entries = handles.entries;
    this.expiry = handles.expiry;
    this.outbox = handles.outbox;
    this.deadLetters = handles.deadLetters;
    this.writer = handles.writer;
    this.outboxIdLimit = handles.outboxIdLimit;
    this.outboxSeq = new AtomicLong(handles.outboxIdLimit);
    // After Handles.open: this process holds the directory's lock, so a store closed on it
    // earlier in this process has already handed its reservations over.
    this.reservations =
        Reservations.takeOver(config.directory(), db.getLatestSequenceNumber(), STRIPES);
  }

  /**
   * Starts building a store on a directory, with the defaults of {@link
   * RocksDbStoreConfig#ofDefaults(Path)}.
   *
   * @param directory the database directory; created if missing
   * @return a builder
   */
  public static Builder builder(Path directory) {
    return new Builder(directory);
  }

  /**
   * Opens (or creates) a store.
   *
   * @param config the settings
   * @param time the clock the background sweeper judges expiry by
   * @param listener hears the expiries the sweeper finds
   * @return the open store; close it to release the directory
   * @throws StoreException if the directory is open in another store (in this or another process),
   *     holds something other than an Idem store, or was written by a newer format
   * @throws StoreUnavailableException if RocksDB cannot open it (I/O error)
   */
  public static RocksDbDedupStore open(
      RocksDbStoreConfig config, TimeSource time, DedupListener listener) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(listener, "listener");
    Handles handles = Handles.open(config);
    RocksDbDedupStore store = new RocksDbDedupStore(config, time, listener, handles);
    store.startSweeper();
    return store;
  }

  /**
   * Returns the settings this store was opened with.
   *
   * @return the settings
   */
  public RocksDbStoreConfig config() {
    return config;
  }

  // ---------------------------------------------------------------- DedupStore

  @Override
  public ReserveResult reserve(ReserveRequest request) {
    return apply(
        request.scope(),
        request.key(),
        "reserve",
        SYNC_NOT_NEEDED,
        current -> DedupStateMachine.reserve(current, request),
        null);
  }

  @Override
  public SettleResult commit(CommitRequest request) {
    return apply(
        request.scope(),
        request.key(),
        "commit",
        SYNC_NEEDED,
        current -> DedupStateMachine.commit(current, request),
        null);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here, under {@link Durability#GROUP_COMMIT}: the commit is decided under the key's lock and
   * queued for the next group commit, and the call returns without waiting for the sync; the stage
   * completes on the thread that leads the group, once the group is synced. Until then, every other
   * step on the key (a duplicate's reserve, an inspect, a forget) waits for that sync, as it would
   * wait for a synchronous commit's lock. If no group is being written, the caller leads the queue
   * before this returns (possibly completing other callers' commits). Under the other modes, it
   * commits as {@link #commit} does.
   */
  @Override
  public CompletionStage<SettleResult> commitAsync(CommitRequest request) {
    if (!writer.groupCommits()) {
      try {
        return CompletableFuture.completedFuture(commit(request));
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    enter();
    boolean queued = false;
    boolean lead = false;
    try {
      ScopeKeys sk = keys(request.scope());
      DedupKey key = request.key();
      int stripe = stripeIndex(sk, key);
      ReentrantLock lock = stripes[stripe];
      lock.lock();
      boolean announced = writer.announce();
      try {
        View view = new View(sk, key, stripe).load();
        Transition<SettleResult> t = DedupStateMachine.commit(view.current(), request);
        Mutations step = new Mutations();
        if (t.changed()) {
          view.moveTo(t.next(), step);
        }
        if (step.isEmpty()) {
          view.publish(true);
          return CompletableFuture.completedFuture(t.answer());
        }
        CompletableFuture<SettleResult> done = new CompletableFuture<>();
        SettleResult answer = t.answer();
        boolean counted = announced;
        announced = false;
        lead =
            enqueueMarked(
                view.entryKey,
                done,
                step,
                counted,
                error -> {
                  if (error == null) {
                    done.complete(answer);
                  } else {
                    done.completeExceptionally(failure("commit", error, true));
                  }
                });
        queued = true;
        // The reservation is gone at once; the key reads as committed only once the marker is.
        view.publish(true);
        return done;
      } finally {
        writer.abandon(announced);
        lock.unlock();
      }
    } catch (RocksDBException e) {
      return CompletableFuture.failedFuture(failure("commit", e, false));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      if (!queued) {
        exit();
      }
      if (lead) {
        writer.leadQueued(); // on the writer's own thread: this one never waits for the sync
      }
    }
  }

  /** {@inheritDoc} Here: under {@link Durability#GROUP_COMMIT}. */
  @Override
  public boolean commitsAsynchronously() {
    return writer.groupCommits();
  }

  /**
   * Waits until no step queued for this entry key ({@link #commitAsync}, {@link #queueRefresh}) is
   * pending (written and synced, or failed). The caller holds the key's stripe lock; the leader
   * removes the marker without it, so this cannot deadlock with the group commit.
   */
  private void awaitQueuedCommit(byte[] entryKey) throws RocksDBException {
    if (committing.isEmpty()) {
      return;
    }
    ByteBuffer slot = ByteBuffer.wrap(entryKey);
    while (committing.containsKey(slot)) {
      writer.awaitDurable(); // a sync queued after the commit: it covers the commit's group
    }
  }

  @Override
  public SettleResult release(ReleaseRequest request) {
    return apply(
        request.scope(),
        request.key(),
        "release",
        SYNC_NOT_NEEDED,
        current -> DedupStateMachine.release(current, request),
        null);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: under the key's stripe lock, on the reservation in memory; nothing is written to disk
   * (reservations are never stored there).
   */
  @Override
  public SettleResult extend(ExtendRequest request) {
    return apply(
        request.scope(),
        request.key(),
        "extend",
        SYNC_NOT_NEEDED,
        current -> DedupStateMachine.extend(current, request),
        null);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: the keys are locked together, each is decided in request order (a key given twice sees
   * its first outcome), and all changes are written as one atomic batch with one sync.
   */
  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    return applyAll(
        requests,
        ReserveRequest::scope,
        ReserveRequest::key,
        (current, r) -> DedupStateMachine.reserve(current, r),
        "reserveAll",
        SYNC_NOT_NEEDED);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: the keys are locked together and all changes are written as one atomic batch with one
   * sync.
   */
  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    return applyAll(
        requests,
        CommitRequest::scope,
        CommitRequest::key,
        (current, c) -> DedupStateMachine.commit(current, c),
        "commitAll",
        SYNC_NEEDED);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: the keys are locked together and all changes are written as one atomic batch with one
   * sync.
   */
  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    return applyAll(
        requests,
        ReleaseRequest::scope,
        ReleaseRequest::key,
        (current, r) -> DedupStateMachine.release(current, r),
        "releaseAll",
        SYNC_NOT_NEEDED);
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    enter();
    try {
      ScopeKeys sk = keys(scope);
      // Under the key's lock: a group commit's write is visible a moment before its sync ends,
      // and its writer holds this lock until then (a queued commit: its marker, which load()
      // waits out), so inspect never reports a commit a power failure could undo.
      int stripe = stripeIndex(sk, key);
      ReentrantLock lock = stripes[stripe];
      lock.lock();
      try {
        return DedupStateMachine.inspect(new View(sk, key, stripe).load().current(), nowMillis);
      } finally {
        lock.unlock();
      }
    } catch (RocksDBException e) {
      throw failure("inspect", e, false);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: answers true if the key had a stored entry, expired or not (an expired entry not yet
   * swept counts, as the SPI says), and removes it with its expiry-index entry.
   */
  @Override
  public boolean forget(Scope scope, DedupKey key) {
    enter();
    boolean writing = false;
    try {
      ScopeKeys sk = keys(scope);
      byte[] entryKey = sk.entryKey(key);
      int stripe = stripeIndex(sk, key);
      ReentrantLock lock = stripes[stripe];
      lock.lock();
      try {
        awaitQueuedCommit(entryKey);
        boolean held = reservations.get(stripe, scope, key) != null;
        if (held) {
          // Nothing to write: a reservation is in memory only (and has no stored entry).
          reservations.set(stripe, scope, key, null);
          return true;
        }
        StoredEntry current = read(sk, key, entryKey);
        if (current == null) {
          return false;
        }
        Mutations step = new Mutations();
        stage(step, sk, key, entryKey, current, null);
        writing = true;
        writer.write(step, false);
        return true;
      } finally {
        lock.unlock();
      }
    } catch (RocksDBException e) {
      throw failure("forget", e, writing);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: removes the scope's reservations (in memory, one lock stripe at a time), then walks
   * the scope's stored entries in batches of {@value #CLEAR_BATCH}; each batch locks its keys,
   * removes the entries still there with their expiry-index entries, and is written as one durable
   * batch. The count is exact: the reservations and entries this call removed. A key reserved in
   * the scope while the walk is under way may survive (it counts as arriving after the clear).
   * Costs time in proportion to the scope's size.
   */
  @Override
  public long clear(Scope scope) {
    enter();
    boolean writing = false;
    try {
      ScopeKeys sk = keys(scope);
      if (!committing.isEmpty()) {
        writer.awaitDurable(); // commits queued before the clear are written before its walk
      }
      long removed = reservations.removeIf(stripes, r -> r.scope().equals(scope)).size();
      byte[] from = sk.prefix;
      List<byte[]> batch = new ArrayList<>(CLEAR_BATCH);
      while (true) {
        batch.clear();
        try (Scan scan = new Scan(db, entries, from, sk.upper)) {
          for (RocksIterator it = scan.iterator;
              it.isValid() && batch.size() < CLEAR_BATCH;
              it.next()) {
            byte[] k = it.key();
            if (sk.isEntryKey(k)) {
              batch.add(k);
            }
          }
          scan.check();
        }
        if (batch.isEmpty()) {
          return removed;
        }
        int[] order =
            batch.stream()
                .mapToInt(k -> stripeIndex(sk, sk.entryDigest(k)))
                .sorted()
                .distinct()
                .toArray();
        int locked = 0;
        try {
          for (int i : order) {
            stripes[i].lock();
            locked++;
          }
          Mutations step = new Mutations();
          for (byte[] k : batch) {
            StoredEntry current = read(sk, sk.entryDigest(k), k);
            if (current != null) {
              stage(step, sk, sk.entryDigest(k), k, current, null);
              removed++;
            }
          }
          if (!step.isEmpty()) {
            writing = true;
            writer.write(step, false);
          }
        } finally {
          for (int i = locked - 1; i >= 0; i--) {
            stripes[order[i]].unlock();
          }
        }
        if (batch.size() < CLEAR_BATCH) {
          return removed;
        }
        from = Bytes.successor(batch.get(batch.size() - 1));
      }
    } catch (RocksDBException e) {
      throw failure("clear", e, writing);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: walks the expiry index up to {@code nowMillis} in batches of {@link
   * RocksDbStoreConfig#sweepBatchSize()}, and removes each entry whose stored deadline really
   * passed (re-checked under the key's lock, so an entry whose sliding window moved since is kept),
   * with its index entry; index entries left by older deadlines are removed too. Then removes the
   * reservations (in memory) whose lease passed. Each expired entry or lapsed reservation removed
   * is reported to the listener. One sweep runs at a time; the background sweeper calls this with
   * the store's {@link TimeSource}.
   */
  @Override
  public long sweepExpired(long nowMillis) {
    enter();
    sweepLock.lock();
    try {
      return sweep(nowMillis) + sweepReservations(nowMillis);
    } catch (RocksDBException e) {
      throw failure("sweepExpired", e, true);
    } finally {
      sweepLock.unlock();
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: reads the format marker and writes a small health record without syncing, so that a
   * database that RocksDB has stopped accepting writes on (a background I/O error, a full disk)
   * reports unavailable.
   */
  @Override
  public void checkHealth() {
    enter();
    try {
      if (db.get(meta, Handles.META_FORMAT) == null) {
        throw new StoreException(
            description
                + ": the format marker is missing; the directory was "
                + "changed by something other than Idem. Restore it from a backup or start empty.");
      }
      Mutations probe = new Mutations();
      byte[] stamp = new byte[8];
      Bytes.putLong(stamp, 0, time.wallMillis());
      probe.put(meta, Handles.META_HEALTH, stamp);
      writer.writeBuffered(probe);
    } catch (RocksDBException e) {
      throw failure("checkHealth", e, false);
    } finally {
      exit();
    }
  }

  /**
   * Compacts every column family fully, down to the last level: returns the space of deleted and
   * expired entries at once instead of as RocksDB's background compactions reach them. An admin
   * operation (after a large {@link #clear} or sweep, or before measuring the size on disk); it
   * rewrites the whole database, so it takes time and I/O in proportion to its size. Operations
   * keep running meanwhile.
   *
   * @throws StoreUnavailableException if RocksDB reports an I/O error
   */
  public void compact() {
    enter();
    try {
      handles.compactAll();
    } catch (RocksDBException e) {
      throw failure("compact", e, true);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: not bounded, durable, no native expiry (a sweeper removes expired entries), with an
   * outbox.
   */
  @Override
  public StoreCapabilities capabilities() {
    return CAPABILITIES;
  }

  /**
   * {@inheritDoc}
   *
   * @return {@code rocksdb:} followed by the absolute directory
   */
  @Override
  public String describe() {
    return description;
  }

  /**
   * Stops the sweeper, waits for running operations, flushes the memtables (so the next open need
   * not replay the WAL) and closes RocksDB, releasing the directory's lock. The reservations in
   * flight are left in memory for the next store opened on the directory in this process (their
   * holders may still be running); a new process starts with none. Closing again does nothing.
   * Afterwards every operation throws {@link IllegalStateException}.
   *
   * @throws StoreException if RocksDB reported an error while closing (the directory is released
   *     anyway; the data is in the WAL)
   */
  @Override
  public void close() {
    ScheduledExecutorService background;
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
      background = sweeper;
      sweeper = null;
    }
    if (background != null) {
      background.shutdownNow();
    }
    // Operations that entered before `closed` was set finish normally; new ones are refused.
    while (active.sum() != 0) {
      LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(100));
    }
    if (background != null) {
      try {
        background.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    // Before the directory's lock is released, so the next open in this process finds them.
    reservations.handOver(config.directory(), db.getLatestSequenceNumber());
    handles.close(description);
  }

  // ---------------------------------------------------------------- OutboxStore

  /**
   * {@inheritDoc}
   *
   * <p>Here: the entry is written in the same write batch as the key's commit, under the key's
   * lock, and returns when that batch is durable. A repeated commit with the token that already
   * committed answers {@link SettleResult#APPLIED} and appends nothing (the first call appended the
   * message).
   */
  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    List<OutboxMessage> copy = List.copyOf(messages);
    return apply(
        commit.scope(),
        commit.key(),
        "commitAndEnqueue",
        SYNC_NEEDED,
        current -> DedupStateMachine.commit(current, commit),
        (step, answer) -> {
          if (answer == SettleResult.APPLIED) {
            for (OutboxMessage message : copy) {
              long id = nextOutboxId();
              OutboxCodec.Entry entry =
                  new OutboxCodec.Entry(
                      0,
                      commit.nowMillis(),
                      0,
                      message.key(),
                      null,
                      message.payload(),
                      false,
                      message.orderingKey());
              step.put(
                  outbox,
                  OutboxCodec.key(OutboxCodec.queuePrefix(message.queue()), id),
                  OutboxCodec.encode(entry));
            }
          }
        });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: claims of one queue are serialized; the claim (its attempt count and hiding time) is
   * durable when this returns, under the store's durability. Ordering keys: the claim walks the
   * queue in id order and takes an entry with an ordering key only if it is the first of its key in
   * the walk and no entry of its key is claimed further on (appends of different dedup keys become
   * visible in the order their writes land, which may differ from id order by a little). Once a
   * claimable entry with an ordering key is found, the walk goes to the end of the queue, so such a
   * claim costs time in proportion to the depth.
   *
   * @throws IllegalArgumentException if {@code max} or {@code claimMillis} is not positive
   */
  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    if (max <= 0) {
      throw new IllegalArgumentException("claim max must be positive, got " + max);
    }
    if (claimMillis <= 0) {
      throw new IllegalArgumentException("claim time must be positive, got " + claimMillis + " ms");
    }
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    long claimedUntil = saturatingAdd(nowMillis, claimMillis);
    enter();
    boolean writing = false;
    try {
      List<OutboxRecord> out = new ArrayList<>(Math.min(max, 64));
      Mutations step = new Mutations();
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        try (Scan scan = new Scan(db, outbox, prefix, OutboxCodec.queueUpper(prefix))) {
          // Candidates in id order; ordering keys seen so far; keys with a live claim anywhere.
          List<byte[]> keys = new ArrayList<>();
          List<byte[]> values = new ArrayList<>();
          List<String> orderingKeys = new ArrayList<>();
          Set<String> seen = new HashSet<>();
          Set<String> held = new HashSet<>();
          boolean ordered = false;
          for (RocksIterator it = scan.iterator; it.isValid(); it.next()) {
            if (!ordered && keys.size() >= max) {
              break; // no candidate has an ordering key: the first max are the answer
            }
            byte[] value = it.value();
            String orderingKey = OutboxCodec.orderingKey(value);
            if (orderingKey != null) {
              if (OutboxCodec.claimedPast(value, nowMillis)) {
                held.add(orderingKey);
              }
              if (!seen.add(orderingKey)) {
                continue; // not the first of its key
              }
            }
            if (OutboxCodec.availableAt(value) > nowMillis || keys.size() >= max) {
              continue;
            }
            ordered |= orderingKey != null;
            keys.add(it.key());
            values.add(value);
            orderingKeys.add(orderingKey);
          }
          scan.check();
          for (int i = 0; i < keys.size() && out.size() < max; i++) {
            String orderingKey = orderingKeys.get(i);
            if (orderingKey != null && held.contains(orderingKey)) {
              continue;
            }
            OutboxCodec.Entry claimed =
                OutboxCodec.decode(values.get(i)).claimedUntil(claimedUntil);
            step.put(outbox, keys.get(i), OutboxCodec.encode(claimed));
            out.add(claimed.toRecord(OutboxCodec.id(keys.get(i)), queue));
          }
        }
        if (!step.isEmpty()) {
          writing = true;
          writer.writeBuffered(step);
        }
      } finally {
        lock.unlock();
      }
      if (writing) {
        // Other claimers may see the claim before it is durable; that only hides the entries.
        writer.awaitDurable();
      }
      return out;
    } catch (RocksDBException e) {
      throw failure("claim", e, writing);
    } catch (MalformedValueException e) {
      throw corrupt("outbox queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: only one process opens the directory at a time, so every claimed entry found is an
   * earlier process's (call it before this store object claims from the queue); each becomes due at
   * once, keeping its attempt count.
   */
  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    boolean writing = false;
    try {
      long released = 0;
      Mutations step = new Mutations();
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        try (Scan scan = new Scan(db, outbox, prefix, OutboxCodec.queueUpper(prefix))) {
          for (RocksIterator it = scan.iterator; it.isValid(); it.next()) {
            OutboxCodec.Entry e = OutboxCodec.decode(it.value());
            if (e.claimed()) {
              step.put(outbox, it.key(), OutboxCodec.encode(e.availableAt(0, e.lastError())));
              released++;
            }
          }
          scan.check();
        }
        if (!step.isEmpty()) {
          writing = true;
          writer.writeBuffered(step);
        }
      } finally {
        lock.unlock();
      }
      if (writing) {
        writer.awaitDurable();
      }
      return released;
    } catch (RocksDBException e) {
      throw failure("releaseClaimsOfEarlierRuns", e, writing);
    } catch (MalformedValueException e) {
      throw corrupt("outbox queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    return updateOutboxEntry(
        queue, id, "acknowledge", (step, key, entry) -> step.delete(outbox, key));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: the attempts are compared under the queue's lock.
   */
  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    return updateOutboxEntry(
        claimed.queue(),
        claimed.id(),
        claimed.attempts(),
        "acknowledge",
        (step, key, entry) -> step.delete(outbox, key));
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    Objects.requireNonNull(error, "error");
    updateOutboxEntry(queue, id, "reschedule", rescheduling(notBeforeMillis, error));
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    Objects.requireNonNull(error, "error");
    return updateOutboxEntry(
        claimed.queue(),
        claimed.id(),
        claimed.attempts(),
        "reschedule",
        rescheduling(notBeforeMillis, error));
  }

  private OutboxChange rescheduling(long notBeforeMillis, String error) {
    return (step, key, e) ->
        step.put(outbox, key, OutboxCodec.encode(e.availableAt(notBeforeMillis, error)));
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    Objects.requireNonNull(reason, "reason");
    updateOutboxEntry(queue, id, "deadLetter", deadLettering(reason, nowMillis));
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    Objects.requireNonNull(reason, "reason");
    return updateOutboxEntry(
        claimed.queue(),
        claimed.id(),
        claimed.attempts(),
        "deadLetter",
        deadLettering(reason, nowMillis));
  }

  private OutboxChange deadLettering(String reason, long nowMillis) {
    return (step, key, e) -> {
      step.delete(outbox, key);
      step.put(deadLetters, key, OutboxCodec.encodeDead(e, nowMillis, reason));
    };
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: in id order (which is append order), from the {@code dead_letters} column family.
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("deadLetters limit must be positive, got " + limit);
    }
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    try (Scan scan = new Scan(db, deadLetters, prefix, OutboxCodec.queueUpper(prefix))) {
      List<DeadLetter> out = new ArrayList<>(Math.min(limit, 64));
      for (RocksIterator it = scan.iterator; it.isValid() && out.size() < limit; it.next()) {
        out.add(OutboxCodec.decodeDead(OutboxCodec.id(it.key()), queue, it.value()));
      }
      scan.check();
      return out;
    } catch (RocksDBException e) {
      throw failure("deadLetters", e, false);
    } catch (MalformedValueException e) {
      throw corrupt("dead letters of queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: reads every dead letter of the queue and sorts them, so a page costs time in
   * proportion to the queue's dead letters.
   */
  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    try (Scan scan = new Scan(db, deadLetters, prefix, OutboxCodec.queueUpper(prefix))) {
      List<DeadLetter> out = new ArrayList<>();
      for (RocksIterator it = scan.iterator; it.isValid(); it.next()) {
        DeadLetter d = OutboxCodec.decodeDead(OutboxCodec.id(it.key()), queue, it.value());
        if (query.matches(d)) {
          out.add(d);
        }
      }
      scan.check();
      out.sort(DeadLetterQuery.NEWEST_FIRST);
      return out.size() > query.limit() ? List.copyOf(out.subList(0, query.limit())) : out;
    } catch (RocksDBException e) {
      throw failure("deadLetters", e, false);
    } catch (MalformedValueException e) {
      throw corrupt("dead letters of queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    byte[] key = OutboxCodec.key(OutboxCodec.queuePrefix(queue), id);
    enter();
    try {
      byte[] value = db.get(deadLetters, key);
      return value == null
          ? Optional.empty()
          : Optional.of(OutboxCodec.decodeDead(id, queue, value));
    } catch (RocksDBException e) {
      throw failure("findDeadLetter", e, false);
    } catch (MalformedValueException e) {
      throw corrupt("dead letter " + id + " of queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: the dead letter's removal and the new outbox entry are one write batch under the
   * queue's lock, durable when this returns.
   */
  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    byte[] key = OutboxCodec.key(prefix, id);
    enter();
    boolean writing = false;
    try {
      long newId;
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        byte[] value = db.get(deadLetters, key);
        if (value == null) {
          return OptionalLong.empty();
        }
        DeadLetter d = OutboxCodec.decodeDead(id, queue, value);
        newId = nextOutboxId();
        Mutations step = new Mutations();
        step.delete(deadLetters, key);
        // With the ordering key the entry had: the requeued entry joins the end of its key's
        // mailbox (the highest id), so it waits behind the key's entries still in the queue.
        step.put(
            outbox,
            OutboxCodec.key(prefix, newId),
            OutboxCodec.encode(
                new OutboxCodec.Entry(
                    0,
                    nowMillis,
                    0,
                    d.key(),
                    null,
                    d.payload(),
                    false,
                    OutboxCodec.deadOrderingKey(value))));
        writing = true;
        writer.writeBuffered(step);
      } finally {
        lock.unlock();
      }
      writer.awaitDurable();
      return OptionalLong.of(newId);
    } catch (RocksDBException e) {
      throw failure("requeueDeadLetter", e, writing);
    } catch (MalformedValueException e) {
      throw corrupt("dead letter " + id + " of queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    byte[] key = OutboxCodec.key(OutboxCodec.queuePrefix(queue), id);
    enter();
    boolean writing = false;
    try {
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        if (db.get(deadLetters, key) == null) {
          return false;
        }
        Mutations step = new Mutations();
        step.delete(deadLetters, key);
        writing = true;
        writer.writeBuffered(step);
      } finally {
        lock.unlock();
      }
      writer.awaitDurable();
      return true;
    } catch (RocksDBException e) {
      throw failure("purgeDeadLetter", e, writing);
    } finally {
      exit();
    }
  }

  @Override
  public long purgeDeadLetters(String queue) {
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    boolean writing = false;
    try {
      long purged = 0;
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        Mutations step = new Mutations();
        try (Scan scan = new Scan(db, deadLetters, prefix, OutboxCodec.queueUpper(prefix))) {
          for (RocksIterator it = scan.iterator; it.isValid(); it.next()) {
            step.delete(deadLetters, it.key());
            purged++;
          }
          scan.check();
        }
        if (!step.isEmpty()) {
          writing = true;
          writer.writeBuffered(step);
        }
      } finally {
        lock.unlock();
      }
      if (writing) {
        writer.awaitDurable();
      }
      return purged;
    } catch (RocksDBException e) {
      throw failure("purgeDeadLetters", e, writing);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: in id order (which is append order), from the {@code outbox} column family; the
   * available-at time is the stored one (0 for an entry never claimed, shown as its enqueue time).
   */
  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("pending limit must be positive, got " + limit);
    }
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    try (Scan scan = new Scan(db, outbox, prefix, OutboxCodec.queueUpper(prefix))) {
      List<PendingEntry> out = new ArrayList<>(Math.min(limit, 64));
      for (RocksIterator it = scan.iterator; it.isValid() && out.size() < limit; it.next()) {
        OutboxCodec.Entry e = OutboxCodec.decode(it.value());
        out.add(
            new PendingEntry(
                OutboxCodec.id(it.key()),
                queue,
                e.key(),
                e.payload(),
                e.attempts(),
                e.enqueuedAtMillis(),
                Math.max(e.availableAtMillis(), e.enqueuedAtMillis()),
                e.lastError()));
      }
      scan.check();
      return out;
    } catch (RocksDBException e) {
      throw failure("pending", e, false);
    } catch (MalformedValueException e) {
      throw corrupt("outbox queue '" + queue + "'", e);
    } finally {
      exit();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Here: counts by walking the queue's keys, so it costs time in proportion to the depth.
   */
  @Override
  public long depth(String queue) {
    byte[] prefix = OutboxCodec.queuePrefix(queue);
    enter();
    try (Scan scan = new Scan(db, outbox, prefix, OutboxCodec.queueUpper(prefix))) {
      long count = 0;
      for (RocksIterator it = scan.iterator; it.isValid(); it.next()) {
        count++;
      }
      scan.check();
      return count;
    } catch (RocksDBException e) {
      throw failure("depth", e, false);
    } finally {
      exit();
    }
  }

  // ---------------------------------------------------------------- the atomic step

  /** Adds extra changes to a step whose transition was applied, e.g. an outbox append. */
  private interface Extra<A> {
    void stage(Mutations step, A answer) throws RocksDBException;
  }

  /**
   * Whether a step must be as durable as the mode promises before it returns. Only commits must:
   * they are what a crash may never take back. Reservations and releases are never written at all
   * (they live in {@link Reservations}); a sliding refresh, or the removal of a dead entry that a
   * reservation replaces, is written without waiting for a sync and becomes durable with the next
   * synced write: losing it to a crash only ends a window at its previous deadline, or leaves a
   * dead entry for the sweeper.
   */
  private static final boolean SYNC_NEEDED = true;

  private static final boolean SYNC_NOT_NEEDED = false;

  /**
   * One key as a step sees it, under the key's stripe lock: its reservation (in memory) or its
   * stored entry (on disk), never both. A step moves it to the transition's next entry: an
   * in-flight entry goes to memory, a committed one to disk (removing the reservation), none
   * removes whichever there was. The memory side is published after the disk write succeeded.
   */
  private final class View {
    final ScopeKeys sk;
    final DedupKey key;
    final byte[] entryKey;
    final int stripe;
    @Nullable StoredEntry held;
    @Nullable StoredEntry disk;
    boolean heldChanged;

    View(ScopeKeys sk, DedupKey key, int stripe) {
      this.sk = sk;
      this.key = key;
      this.entryKey = sk.entryKey(key);
      this.stripe = stripe;
    }

    /** Reads the key's state; the caller holds its stripe lock. */
    View load() throws RocksDBException {
      awaitQueuedCommit(entryKey);
      held = reservations.get(stripe, sk.scope, key);
      // A key with a reservation has no stored entry: no need to read the disk.
      disk = held == null ? read(sk, key, entryKey) : null;
      return this;
    }

    /**
     * The entry the state machine decides on. An in-flight entry on disk was written by an earlier
     * process (a version that stored reservations): its holder died with that process, so it reads
     * as absent; the step that replaces it (or the sweeper) removes it.
     */
    @Nullable StoredEntry current() {
      if (held != null) {
        return held;
      }
      return disk != null && disk.state() == StoredEntry.State.COMMITTED ? disk : null;
    }

    /** Stages the disk side of the move to {@code next} in {@code step}; remembers the rest. */
    void moveTo(@Nullable StoredEntry next, Mutations step) {
      if (next != null && next.state() == StoredEntry.State.COMMITTED) {
        stage(step, sk, key, entryKey, disk, next);
        disk = next;
        setHeld(null);
        return;
      }
      if (disk != null) {
        // A reservation replaces a dead entry, or a removal removes a stored one.
        stage(step, sk, key, entryKey, disk, null);
        disk = null;
      }
      setHeld(next);
    }

    private void setHeld(@Nullable StoredEntry next) {
      if (held != next) {
        held = next;
        heldChanged = true;
      }
    }

    /**
     * Publishes the memory side once the step's write is done. If the write failed, a new
     * reservation is not made, but a removed one stays removed: after a failed commit the disk
     * holds whichever outcome RocksDB kept (committed, or nothing: a retried commit then answers
     * stale, and the event's redelivery is accepted anew).
     */
    void publish(boolean written) {
      if (heldChanged && (written || held == null)) {
        reservations.set(stripe, sk.scope, key, held);
      }
    }
  }

  private <A> A apply(
      Scope scope,
      DedupKey key,
      String op,
      boolean syncNeeded,
      Function<@Nullable StoredEntry, Transition<A>> decide,
      @Nullable Extra<A> extra) {
    enter();
    boolean writing = false;
    boolean queued = false;
    boolean lead = false;
    try {
      ScopeKeys sk = keys(scope);
      int stripe = stripeIndex(sk, key);
      ReentrantLock lock = stripes[stripe];
      lock.lock();
      boolean announced = syncNeeded && writer.announce();
      try {
        View view = new View(sk, key, stripe).load();
        Transition<A> t = decide.apply(view.current());
        if (!t.changed()) {
          return t.answer();
        }
        Mutations step = new Mutations();
        view.moveTo(t.next(), step);
        if (extra != null) {
          extra.stage(step, t.answer());
        }
        boolean written = false;
        try {
          if (!step.isEmpty()) {
            writing = true;
            if (syncNeeded) {
              boolean counted = announced;
              announced = false;
              writer.write(step, counted);
            } else if (writer.groupCommits() && isRefresh(t.next())) {
              lead = queueRefresh(view.entryKey, step);
              queued = true;
            } else {
              writer.writeBuffered(step);
            }
          }
          written = true;
        } finally {
          view.publish(written);
        }
        return t.answer();
      } finally {
        writer.abandon(announced);
        lock.unlock();
      }
    } catch (RocksDBException e) {
      throw failure(op, e, writing);
    } finally {
      if (!queued) {
        exit();
      }
      if (lead) {
        writer.leadQueued(); // on the writer's own thread: this one never waits for the sync
      }
    }
  }

  /**
   * Whether an unsynced step that moves a key to {@code next} is a sliding refresh: it rewrites a
   * committed entry (the other unsynced steps remove a dead entry or touch only memory).
   */
  private static boolean isRefresh(@Nullable StoredEntry next) {
    return next != null && next.state() == StoredEntry.State.COMMITTED;
  }

  /**
   * Queues a sliding refresh for the next group commit, under the key's lock, instead of writing it
   * from the calling thread. Until the group is written the entry key is marked in {@link
   * #committing}, so every later step on the key waits for it under the key's lock ({@link
   * #awaitQueuedCommit}) and reads what it wrote, as after a queued commit. The caller counted
   * itself active ({@link #enter()}); the group's completion counts it out, so the store does not
   * close with the step still queued.
   *
   * <p>The removal of a dead entry that a new reservation replaces is still written at once:
   * queued, it would make that reservation's commit wait for a whole group under the key's lock.
   *
   * <p>Why not write it here: a request thread that calls into RocksDB's write path while the group
   * leader writes its batch waits for it in RocksDB's write queue (and is switched out), and the
   * service on RocksDB did 28-32k requests/s with fixed windows against 20-25k with sliding ones,
   * the only difference being these writes (2026-12-04, wrk, 50% duplicates). Queued, they ride in
   * the group's batch. What a crash may lose is unchanged in kind: an unsynced write either way,
   * now also one still in the queue (about a millisecond) when the process dies; a lost refresh
   * only ends the key's window at its previous deadline.
   *
   * @return true if the caller must start the queue's leader ({@link Writer#leadQueued()}) once it
   *     has released the key's lock
   */
  private boolean queueRefresh(byte[] entryKey, Mutations step) {
    // Queued like a commit, so its group syncs too: letting groups of refreshes alone skip the
    // sync was tried and made the service slower (23.9-27.2k against 26.0-29.0k requests/s, more
    // syncs per request, not fewer): those groups ended at once, and the commits behind them then
    // formed smaller groups.
    return enqueueMarked(
        entryKey,
        new Object(),
        step,
        false,
        error -> {
          if (error != null) {
            LOG.log(
                System.Logger.Level.WARNING,
                "{0}: a sliding refresh could not be written; the key's window ends at its"
                    + " previous deadline",
                description,
                error);
          }
        });
  }

  /**
   * Queues a step for the next group commit with its entry key marked in {@link #committing} until
   * the group completes, under the key's lock: the one way a step is queued ({@link #commitAsync},
   * {@link #queueRefresh}). The caller counted itself active ({@link #enter()}); the completion
   * removes the marker, counts the caller out, then runs {@code then}. If the step could not be
   * queued at all, the marker is removed at once (left behind, it would stall the key).
   *
   * @return true if the caller must start the queue's leader ({@link Writer#leadQueued()}) once it
   *     has released the key's lock
   */
  private boolean enqueueMarked(
      byte[] entryKey,
      Object marker,
      Mutations step,
      boolean announced,
      Consumer<@Nullable RocksDBException> then) {
    ByteBuffer slot = ByteBuffer.wrap(entryKey);
    committing.put(slot, marker);
    try {
      return writer.enqueue(
          step,
          announced,
          error -> {
            committing.remove(slot, marker);
            exit(); // the step was counted active until its group completed
            then.accept(error);
          });
    } catch (RuntimeException | Error e) {
      committing.remove(slot, marker);
      throw e;
    }
  }

  private <R, A> List<A> applyAll(
      List<R> requests,
      Function<R, Scope> scopeOf,
      Function<R, DedupKey> keyOf,
      BiFunction<@Nullable StoredEntry, R, Transition<A>> decide,
      String op,
      boolean syncNeeded) {
    int n = requests.size();
    if (n == 0) {
      return new ArrayList<>(0);
    }
    if (n == 1) {
      R only = requests.get(0);
      List<A> one = new ArrayList<>(1);
      one.add(
          apply(
              scopeOf.apply(only),
              keyOf.apply(only),
              op,
              syncNeeded,
              current -> decide.apply(current, only),
              null));
      return one;
    }
    enter();
    boolean writing = false;
    try {
      // One view per distinct key: a key given twice sees the outcome of its first request.
      Map<ByteBuffer, View> byKey = new HashMap<>();
      View[] views = new View[n];
      for (int i = 0; i < n; i++) {
        R r = requests.get(i);
        ScopeKeys sk = keys(scopeOf.apply(r));
        DedupKey key = keyOf.apply(r);
        View v = new View(sk, key, stripeIndex(sk, key));
        View first = byKey.putIfAbsent(ByteBuffer.wrap(v.entryKey), v);
        views[i] = first != null ? first : v;
      }
      // Lock in ascending stripe order: no deadlock with single-key steps or other batches.
      int[] order = byKey.values().stream().mapToInt(v -> v.stripe).sorted().distinct().toArray();
      int locked = 0;
      boolean announced = false;
      try {
        for (int s : order) {
          stripes[s].lock();
          locked++;
        }
        announced = syncNeeded && writer.announce();
        for (View v : byKey.values()) {
          v.load();
        }
        Mutations step = new Mutations();
        List<A> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          Transition<A> t = decide.apply(views[i].current(), requests.get(i));
          if (t.changed()) {
            views[i].moveTo(t.next(), step);
          }
          out.add(t.answer());
        }
        boolean written = false;
        try {
          if (!step.isEmpty()) {
            writing = true;
            if (syncNeeded) {
              boolean counted = announced;
              announced = false;
              writer.write(step, counted);
            } else {
              writer.writeBuffered(step);
            }
          }
          written = true;
        } finally {
          for (View v : byKey.values()) {
            v.publish(written);
          }
        }
        return out;
      } finally {
        writer.abandon(announced);
        for (int i = locked - 1; i >= 0; i--) {
          stripes[order[i]].unlock();
        }
      }
    } catch (RocksDBException e) {
      throw failure(op, e, writing);
    } finally {
      exit();
    }
  }

  /**
   * Stages the change from {@code current} to {@code next} (null: delete): the entry, and its
   * expiry-index entry moved with its {@linkplain #indexedDeadline indexed deadline}, in the same
   * batch, so once the batch is applied the index holds the entry's key at its indexed deadline. A
   * sliding refresh that stays within the same granule writes the entry alone.
   */
  private void stage(
      Mutations step,
      ScopeKeys sk,
      DedupKey key,
      byte[] entryKey,
      @Nullable StoredEntry current,
      @Nullable StoredEntry next) {
    long oldIndexed = current == null ? Long.MAX_VALUE : indexedDeadline(current.deadlineMillis());
    if (next == null) {
      step.delete(entries, entryKey);
      if (oldIndexed != Long.MAX_VALUE) {
        step.delete(expiry, sk.indexKey(oldIndexed, key));
      }
      return;
    }
    step.put(entries, entryKey, EntryCodec.encode(next));
    long newIndexed = indexedDeadline(next.deadlineMillis());
    if (newIndexed != oldIndexed) {
      if (oldIndexed != Long.MAX_VALUE) {
        step.delete(expiry, sk.indexKey(oldIndexed, key));
      }
      if (newIndexed != Long.MAX_VALUE) {
        step.put(expiry, sk.indexKey(newIndexed, key), EMPTY);
      }
    }
  }

  /**
   * The deadline under which the expiry index keeps an entry: its deadline rounded down to a whole
   * {@value #INDEX_GRANULE_MILLIS} ms (never later than the deadline, so the sweeper reaches the
   * entry by its deadline), or {@link Long#MAX_VALUE} for an entry kept forever. A sliding refresh
   * moves a deadline by a little at each duplicate; within one granule it leaves the index alone,
   * so it writes one key instead of three (the entry, the old index key's removal, the new one).
   */
  static long indexedDeadline(long deadlineMillis) {
    if (deadlineMillis == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    if (deadlineMillis < Long.MIN_VALUE + INDEX_GRANULE_MILLIS) {
      return Long.MIN_VALUE;
    }
    return deadlineMillis - Math.floorMod(deadlineMillis, INDEX_GRANULE_MILLIS);
  }

  private @Nullable StoredEntry read(ScopeKeys sk, DedupKey key, byte[] entryKey)
      throws RocksDBException {
    byte[] value = db.get(entries, entryKey);
    return value == null ? null : decode(sk, entryKey, value);
  }

  private StoredEntry decode(ScopeKeys sk, byte[] entryKey, byte[] value) {
    try {
      return EntryCodec.decode(value);
    } catch (MalformedValueException e) {
      throw corrupt(sk.scope + " " + sk.entryDigest(entryKey), e);
    }
  }

  // ---------------------------------------------------------------- sweeping

  private long sweep(long now) throws RocksDBException {
    int batch = config.sweepBatchSize();
    long removed = 0;
    byte[] from = EMPTY;
    List<byte[]> candidates = new ArrayList<>(Math.min(batch, 1024));
    List<ScopeKeys> owners = new ArrayList<>(Math.min(batch, 1024));
    while (!closed) {
      candidates.clear();
      owners.clear();
      ScopeKeys sk = null;
      try (Scan scan = new Scan(db, expiry, null, null)) {
        RocksIterator it = scan.iterator;
        it.seek(from);
        while (it.isValid() && candidates.size() < batch) {
          byte[] k = it.key();
          if (sk == null || !sk.owns(k)) {
            ScopeKeys parsed = ScopeKeys.fromStoredKey(k);
            sk = parsed == null ? null : keys(parsed.scope);
          }
          if (sk == null || !sk.isIndexKey(k)) {
            // Not a key this format writes: leave it, and do not stop at it.
            LOG.log(
                System.Logger.Level.WARNING,
                "{0}: skipping a malformed expiry-index key " + "({1} bytes)",
                description,
                k.length);
            it.next();
            continue;
          }
          if (sk.indexDeadline(k) <= now) {
            candidates.add(k);
            owners.add(sk);
            it.next();
          } else {
            // The rest of this scope's index lies in the future: jump to the next scope.
            it.seek(sk.upper);
          }
        }
        scan.check();
      }
      for (int i = 0; i < candidates.size(); i++) {
        if (expire(owners.get(i), candidates.get(i), now)) {
          removed++;
        }
      }
      if (candidates.size() < batch) {
        break;
      }
      from = Bytes.successor(candidates.get(candidates.size() - 1));
    }
    return removed;
  }

  /** Removes the reservations whose lease passed at {@code now}, and reports each. */
  private long sweepReservations(long now) {
    List<Reservations.Removed> lapsed =
        reservations.removeIf(stripes, r -> r.entry().isDeadAt(now));
    for (Reservations.Removed r : lapsed) {
      report(r.scope(), r.key(), true);
    }
    return lapsed.size();
  }

  private void report(Scope scope, DedupKey key, boolean leaseExpired) {
    try {
      listener.onExpired(scope, key, leaseExpired);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "listener failed on an expiry; ignored", e);
    }
  }

  /**
   * Handles one index key whose deadline passed: removes the entry it points at if that entry is
   * dead at {@code now} (with the index key and, if it differs, the entry's own index key), keeps
   * both if the entry is live and indexed by this key (a deadline later in the same granule), and
   * otherwise removes the index key as left over, first writing the live entry's own index key
   * (idempotent; it makes up for keys written by a version that indexed exact deadlines).
   */
  private boolean expire(ScopeKeys sk, byte[] indexKey, long now) throws RocksDBException {
    DedupKey key = sk.indexDigest(indexKey);
    long deadline = sk.indexDeadline(indexKey);
    byte[] entryKey = sk.entryKey(key);
    boolean expired = false;
    boolean leaseExpired = false;
    ReentrantLock lock = stripe(sk, key);
    lock.lock();
    try {
      awaitQueuedCommit(entryKey); // a refresh still queued may have moved the deadline
      StoredEntry current = read(sk, key, entryKey);
      Mutations step = new Mutations();
      if (current != null) {
        long own = indexedDeadline(current.deadlineMillis());
        if (current.isDeadAt(now)) {
          step.delete(entries, entryKey);
          if (own != deadline && own != Long.MAX_VALUE) {
            step.delete(expiry, sk.indexKey(own, key));
          }
          expired = true;
          leaseExpired = current.state() == StoredEntry.State.IN_FLIGHT;
        } else if (own == deadline) {
          return false;
        } else if (own != Long.MAX_VALUE) {
          step.put(expiry, sk.indexKey(own, key), EMPTY);
        }
      }
      // Either the entry expired, or the index key is left over from an older deadline.
      step.delete(expiry, indexKey);
      // Not synced: removing a dead entry changes no answer, and the next synced write (or the
      // next sweep after a crash) makes it durable.
      writer.writeBuffered(step);
    } finally {
      lock.unlock();
    }
    if (expired) {
      report(sk.scope, key, leaseExpired);
    }
    return expired;
  }

  private void startSweeper() {
    Duration interval = config.sweepInterval();
    if (interval.isZero()) {
      return;
    }
    ScheduledExecutorService executor =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread t = new Thread(task, "idem-rocksdb-sweeper " + config.directory());
              t.setDaemon(true);
              return t;
            });
    long millis = interval.toMillis();
    executor.scheduleWithFixedDelay(this::sweepInBackground, millis, millis, TimeUnit.MILLISECONDS);
    synchronized (lifecycle) {
      sweeper = executor;
    }
  }

  private void sweepInBackground() {
    if (closed) {
      return;
    }
    try {
      sweepExpired(time.wallMillis());
    } catch (RuntimeException e) {
      if (!closed) {
        LOG.log(
            System.Logger.Level.WARNING,
            description + ": background sweep failed; retrying at " + "the next interval",
            e);
      }
    }
  }

  // ---------------------------------------------------------------- outbox helpers

  /** Changes one outbox entry under its queue's lock, if it exists. */
  private interface OutboxChange {
    void stage(Mutations step, byte[] key, OutboxCodec.Entry entry) throws RocksDBException;
  }

  private boolean updateOutboxEntry(String queue, long id, String op, OutboxChange change) {
    return updateOutboxEntry(queue, id, -1, op, change);
  }

  /** As above, only if the entry is still under claim {@code fence} (-1: any). */
  private boolean updateOutboxEntry(
      String queue, long id, int fence, String op, OutboxChange change) {
    byte[] key = OutboxCodec.key(OutboxCodec.queuePrefix(queue), id);
    enter();
    boolean writing = false;
    try {
      ReentrantLock lock = queueLock(queue);
      lock.lock();
      try {
        byte[] value = db.get(outbox, key);
        if (value == null) {
          return false;
        }
        OutboxCodec.Entry entry = OutboxCodec.decode(value);
        if (fence >= 0 && entry.attempts() != fence) {
          return false;
        }
        Mutations step = new Mutations();
        change.stage(step, key, entry);
        writing = true;
        writer.writeBuffered(step);
      } finally {
        lock.unlock();
      }
      // Made durable after the queue's lock is released, so that deliverers share syncs.
      writer.awaitDurable();
      return true;
    } catch (RocksDBException e) {
      throw failure(op, e, writing);
    } catch (MalformedValueException e) {
      throw corrupt("outbox queue '" + queue + "' entry " + id, e);
    } finally {
      exit();
    }
  }

  /**
   * Returns the next outbox id. Ids come from blocks whose upper bound is persisted before any id
   * of the block is used, so an id is never handed out twice, even across crashes.
   */
  private long nextOutboxId() throws RocksDBException {
    long id = outboxSeq.incrementAndGet();
    if (id >= outboxIdLimit) {
      synchronized (outboxIdLock) {
        while (id >= outboxIdLimit) {
          long limit = outboxIdLimit + OUTBOX_ID_BLOCK;
          byte[] value = new byte[8];
          Bytes.putLong(value, 0, limit);
          Mutations step = new Mutations();
          step.put(meta, Handles.META_OUTBOX_ID_LIMIT, value);
          writer.write(step, false);
          outboxIdLimit = limit;
        }
      }
    }
    return id;
  }

  // ---------------------------------------------------------------- plumbing

  private ScopeKeys keys(Scope scope) {
    ScopeKeys sk = scopes.get(scope);
    return sk != null ? sk : scopes.computeIfAbsent(scope, ScopeKeys::new);
  }

  private int stripeIndex(ScopeKeys sk, DedupKey key) {
    long h = key.word(1) ^ sk.hash;
    return (int) (h ^ (h >>> 32)) & (STRIPES - 1);
  }

  private ReentrantLock stripe(ScopeKeys sk, DedupKey key) {
    return stripes[stripeIndex(sk, key)];
  }

  private ReentrantLock queueLock(String queue) {
    int h = queue.hashCode() * 0x9E3779B9;
    return queueLocks[(h ^ (h >>> 16)) & (QUEUE_STRIPES - 1)];
  }

  private static ReentrantLock[] newLocks(int n) {
    ReentrantLock[] locks = new ReentrantLock[n];
    for (int i = 0; i < n; i++) {
      locks[i] = new ReentrantLock();
    }
    return locks;
  }

  private void enter() {
    active.increment();
    if (closed) {
      active.decrement();
      throw new IllegalStateException(
          description + " is closed; open a new store on the directory to use it again");
    }
  }

  private void exit() {
    active.decrement();
  }

  /** The store's writer, for tests of the group commit in this package. */
  Writer writer() {
    return writer;
  }

  private RuntimeException failure(String op, RocksDBException e, boolean wrote) {
    return Handles.failure(description, op, e, wrote);
  }

  private StoreException corrupt(String where, MalformedValueException e) {
    return new StoreException(
        description
            + ": the stored value of "
            + where
            + " is not readable ("
            + e.getMessage()
            + "). The directory was written by a newer Idem or changed by another program; open it "
            + "with the Idem version that wrote it, or move it away to start empty.",
        e);
  }

  private static long saturatingAdd(long a, long b) {
    long sum = a + b;
    return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
  }

  // ---------------------------------------------------------------- builder

  /**
   * Builds a {@link RocksDbDedupStore}. Not thread-safe; {@link #build()} validates the settings
   * and opens the store.
   */
  public static final class Builder {
    private final Path directory;
    private Durability durability = Durability.GROUP_COMMIT;
    private Duration groupCommitMaxDelay = RocksDbStoreConfig.DEFAULT_GROUP_COMMIT_MAX_DELAY;
    private Duration sweepInterval = RocksDbStoreConfig.DEFAULT_SWEEP_INTERVAL;
    private int sweepBatchSize = RocksDbStoreConfig.DEFAULT_SWEEP_BATCH_SIZE;
    private long blockCacheBytes = RocksDbStoreConfig.DEFAULT_BLOCK_CACHE_BYTES;
    private TimeSource timeSource = TimeSource.system();
    private DedupListener listener = DedupListener.NOOP;

    private Builder(Path directory) {
      this.directory = directory;
    }

    /**
     * Sets when a write counts as done.
     *
     * @param durability the mode (default {@link Durability#GROUP_COMMIT})
     * @return this builder
     */
    public Builder durability(Durability durability) {
      this.durability = durability;
      return this;
    }

    /**
     * Sets how long a group-commit leader may wait for writers about to join.
     *
     * @param maxDelay 0 to 1 s (default 0: sync at once)
     * @return this builder
     */
    public Builder groupCommitMaxDelay(Duration maxDelay) {
      this.groupCommitMaxDelay = maxDelay;
      return this;
    }

    /**
     * Sets how often the background sweeper runs.
     *
     * @param interval at least 10 ms, or {@link Duration#ZERO} for no background sweeper (default
     *     10 s)
     * @return this builder
     */
    public Builder sweepInterval(Duration interval) {
      this.sweepInterval = interval;
      return this;
    }

    /**
     * Sets how many expiry-index entries one sweep step handles.
     *
     * @param size 1 to 100,000 (default 1,000)
     * @return this builder
     */
    public Builder sweepBatchSize(int size) {
      this.sweepBatchSize = size;
      return this;
    }

    /**
     * Sets the size of the shared block cache.
     *
     * @param bytes at least 1 MiB (default 64 MiB)
     * @return this builder
     */
    public Builder blockCacheBytes(long bytes) {
      this.blockCacheBytes = bytes;
      return this;
    }

    /**
     * Sets the clock the background sweeper judges expiry by (requests carry their own times).
     *
     * @param timeSource the clock (default {@link TimeSource#system()})
     * @return this builder
     */
    public Builder timeSource(TimeSource timeSource) {
      if (timeSource == null) {
        throw new IdemConfigException("rocksdb timeSource must not be null");
      }
      this.timeSource = timeSource;
      return this;
    }

    /**
     * Sets the listener that hears the expiries the sweeper finds ({@link
     * DedupListener#onExpired}). It is called on the sweeping thread, after the entry's removal,
     * outside the key's lock; it must not close the store (close waits for the sweep to end).
     *
     * @param listener the listener (default {@link DedupListener#NOOP})
     * @return this builder
     */
    public Builder listener(DedupListener listener) {
      if (listener == null) {
        throw new IdemConfigException("rocksdb listener must not be null");
      }
      this.listener = listener;
      return this;
    }

    /**
     * Validates the settings without opening anything.
     *
     * @return the settings
     * @throws IdemConfigException naming a setting that is not allowed
     */
    public RocksDbStoreConfig toConfig() {
      return new RocksDbStoreConfig(
          directory,
          durability,
          groupCommitMaxDelay,
          sweepInterval,
          sweepBatchSize,
          blockCacheBytes);
    }

    /**
     * Validates the settings and opens the store.
     *
     * @return the open store
     * @throws IdemConfigException naming a setting that is not allowed
     * @throws StoreException if the directory is open elsewhere or is not an Idem store
     * @throws StoreUnavailableException if RocksDB cannot open it
     */
    public RocksDbDedupStore build() {
      return open(toConfig(), timeSource, listener);
    }
  }
}
