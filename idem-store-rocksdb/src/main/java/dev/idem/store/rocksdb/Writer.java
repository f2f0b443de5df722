package dev.idem.store.rocksdb;

import java.util.ArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * Writes atomic steps with the store's {@link Durability}.
 *
 * <p>Under {@link Durability#GROUP_COMMIT} the synchronous writers ({@link #write}) elect a leader
 * among themselves: a writer appends its step to a queue; if no leader is active it becomes one,
 * copies every queued step into one write batch, writes it, syncs the WAL once and wakes the
 * writers it covered. Writers that arrive while a leader syncs form the next group. Steps queued
 * without waiting ({@link #enqueue}) are led by the writer's own threads instead ({@link
 * #leadQueued}), so the thread that queued one never waits for a sync. Before draining, the leader
 * waits up to {@code groupCommitMaxDelay} for writers that already hold their key's lock and are
 * about to join ({@link #announce()}), so steady concurrent load forms large groups while a lone
 * writer never waits.
 *
 * <p>Each waiting writer parks on its own and is woken only when its step is written, or when it is
 * handed the lead: a leader that finishes wakes the writers of its group and the first writer of
 * the next group (which leads it), never the whole queue. (A shared condition woke every writer of
 * the next group after each sync only for all but one of them to park again: one wasted context
 * switch per waiting writer per sync.)
 *
 * <p>A group's batch is written unsynced and then synced with {@code SyncWAL}, so its changes are
 * visible a moment before they are durable; its writers return only after the sync, and the store
 * holds each committing key's lock until then, so no answer given under that lock rests on a commit
 * that a power failure could still undo.
 */
final class Writer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Writer.class.getName());

  /**
   * At most this many of the writer's own threads ({@link #leadInBackground}): one leads while the
   * others run their groups' completions. When all are busy, the thread that has the lead to hand
   * on leads the queue itself, so the queue never stalls and the threads stay bounded.
   */
  static final int MAX_THREADS = 4;

  private final RocksDB db;
  private final Durability durability;
  private final long maxDelayNanos;
  private final WriteOptions synced;
  private final WriteOptions buffered;

  // Group commit state, guarded by lock.
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition arrived = lock.newCondition();
  private ArrayList<Pending> queue = new ArrayList<>();
  private boolean leaderActive;
  private final AtomicInteger preparing = new AtomicInteger();
  private final WriteBatch groupBatch;
  private @Nullable ThreadPoolExecutor background; // guarded by this; leads queued steps
  private final ThreadFactory threads;

  /** For tests only: runs in the leader before each group's sync; null otherwise. */
  volatile @Nullable Runnable beforeGroupSync;

  Writer(RocksDB db, Durability durability, long maxDelayNanos) {
    this(
        db,
        durability,
        maxDelayNanos,
        r -> {
          Thread t = new Thread(r, "idem-rocksdb-group-commit");
          t.setDaemon(true);
          return t;
        });
  }

  /** For tests: {@code threads} makes the writer's own threads. */
  Writer(RocksDB db, Durability durability, long maxDelayNanos, ThreadFactory threads) {
    this.threads = threads;
    this.db = db;
    this.durability = durability;
    this.maxDelayNanos = maxDelayNanos;
    this.synced = new WriteOptions().setSync(true);
    this.buffered = new WriteOptions().setSync(false);
    this.groupBatch = new WriteBatch();
  }

  /**
   * Announces a writer that holds its key's lock and is computing a step, so that a group-commit
   * leader waits briefly for it. Every announcement must be matched by {@link #write} with {@code
   * announced} set, or by {@link #abandon}.
   *
   * @return whether the writer was counted (only under group commit with a delay)
   */
  boolean announce() {
    if (durability == Durability.GROUP_COMMIT && maxDelayNanos > 0) {
      preparing.incrementAndGet();
      return true;
    }
    return false;
  }

  /** A writer counted by {@link #announce()} will not write after all. */
  void abandon(boolean announced) {
    if (announced) {
      preparing.decrementAndGet();
    }
  }

  /**
   * Writes one atomic step and returns when it is visible and as durable as the mode promises. A
   * writer counted by {@link #announce()} passes {@code announced} and is counted down here.
   */
  void write(Mutations step, boolean announced) throws RocksDBException {
    switch (durability) {
      case GROUP_COMMIT -> submit(step, announced);
      case FSYNC -> writeNow(step, synced);
      case OS_BUFFERED -> writeNow(step, buffered);
    }
  }

  /**
   * Writes one atomic step without waiting for a sync: visible at once, durable after the next
   * {@link #awaitDurable()} (or any later synced write). For changes whose loss on a power failure
   * the caller tolerates, or that it makes durable itself after releasing its locks.
   */
  void writeBuffered(Mutations step) throws RocksDBException {
    writeNow(step, buffered);
  }

  /**
   * Returns when every write that returned before this call is as durable as the mode promises: one
   * shared sync under group commit, one sync under FSYNC, nothing under OS_BUFFERED.
   */
  void awaitDurable() throws RocksDBException {
    switch (durability) {
      case GROUP_COMMIT -> submit(null, false);
      case FSYNC -> db.syncWal();
      case OS_BUFFERED -> {
        // Never synced by the store, by definition of the mode.
      }
    }
  }

  /** Whether writes are group-committed, so that {@link #enqueue} may be used. */
  boolean groupCommits() {
    return durability == Durability.GROUP_COMMIT;
  }

  /**
   * Queues one atomic step for the next group commit without waiting for it (group commit only):
   * {@code done} runs once the step's group was written and synced (with null), or failed (with the
   * error), on the thread that leads that group. A writer counted by {@link #announce()} passes
   * {@code announced}.
   *
   * @return true if the caller must now start the queue's leader ({@link #leadQueued()}): no
   *     group-commit leader was active
   */
  boolean enqueue(Mutations step, boolean announced, Consumer<@Nullable RocksDBException> done) {
    return joinQueue(new Pending(step, null, done), announced);
  }

  /**
   * Appends a writer to the queue (counting an announced one as arrived) and says whether it must
   * lead: no leader was active, so it is now.
   */
  private boolean joinQueue(Pending mine, boolean announced) {
    lock.lock();
    try {
      queue.add(mine);
      if (announced) {
        preparing.decrementAndGet();
        arrived.signal();
      }
      if (leaderActive) {
        return false;
      }
      leaderActive = true;
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Starts the lead of the queue after {@link #enqueue} answered true, on one of the writer's own
   * threads ({@code idem-rocksdb-group-commit}), and returns at once: the caller (a request thread
   * in the service) never syncs, so it goes back to its own work instead of blocking in {@code
   * fdatasync} for about a millisecond while other threads must be woken to do that work. (Measured
   * on the service with RocksDB: 8-23% more requests/s and 0.3 fewer context switches per request
   * than when the queuing thread led.) That thread leads for as many groups as keep arriving, or
   * until it hands the lead to a writer waiting in {@link #write}. If no such thread is free (all
   * {@link #MAX_THREADS} run completions) or none can be started (the JVM is out of threads), the
   * caller leads after all, so the queue never stalls.
   */
  void leadQueued() {
    if (!leadInBackground()) {
      lead(null);
    }
  }

  private void writeNow(Mutations step, WriteOptions options) throws RocksDBException {
    if (step.writeAlone(db, options)) {
      return; // e.g. a sliding refresh within its index granule: the entry alone
    }
    try (WriteBatch batch = new WriteBatch()) {
      step.appendTo(batch);
      db.write(options, batch);
    }
  }

  private void submit(@Nullable Mutations step, boolean announced) throws RocksDBException {
    Pending mine = new Pending(step, Thread.currentThread(), null);
    boolean leading = joinQueue(mine, announced);
    if (!leading) {
      leading = awaitTurn(mine);
    }
    if (leading) {
      lead(mine);
    }
    if (mine.error != null) {
      throw mine.error;
    }
  }

  /**
   * Parks until the step is written (false) or the lead is handed over (true); uninterruptible,
   * like a write the caller cannot abandon, and the interrupt is kept for the caller.
   */
  private static boolean awaitTurn(Pending mine) {
    boolean interrupted = false;
    int state;
    while ((state = mine.state) == Pending.WAITING) {
      LockSupport.park(mine);
      if (Thread.interrupted()) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return state == Pending.LEAD;
  }

  /**
   * Leads groups until the queue is empty or the lead is handed to a waiting writer. {@code self}
   * is the leading writer's own entry (it returns when this returns), or null for one of the
   * writer's own threads ({@link #leadQueued()}).
   *
   * <p>Who leads what follows is decided by {@link #leadOne}; a synchronous writer ({@code self}
   * non-null) leads only its own group, so it never waits for an unbounded run of asynchronous
   * steps, unless no other thread could take them.
   */
  private void lead(@Nullable Pending self) {
    Pending mine = self;
    while (leadOne(mine) == LEAD_AGAIN) {
      mine = null; // only queued steps follow and this thread holds the lead: it leads them too
    }
  }

  /** {@link #leadOne}: no leader is active now, or the lead went to another thread. */
  private static final int STOP = 0;

  /** {@link #leadOne}: queued steps follow and the calling thread holds the lead for them. */
  private static final int LEAD_AGAIN = 1;

  /**
   * Hands a queue of queued steps (nobody waiting in {@link #write}) to a thread of the writer's
   * own. Threads are made as needed, up to {@link #MAX_THREADS}, and end after a minute idle:
   * usually two take turns, one leading the next group while the other runs its group's completions
   * (see {@link #leadOne}), so a slow completion never holds back the next sync.
   *
   * @return false if no thread could take it (all {@link #MAX_THREADS} are busy, or none could be
   *     started): the caller holds the lead still and must lead the queue itself
   */
  private boolean leadInBackground() {
    ThreadPoolExecutor e;
    synchronized (this) {
      e = background;
      if (e == null) {
        e =
            new ThreadPoolExecutor(
                0, MAX_THREADS, 1, TimeUnit.MINUTES, new SynchronousQueue<>(), threads);
        background = e;
      }
    }
    try {
      e.execute(() -> lead(null));
      return true;
    } catch (RejectedExecutionException | OutOfMemoryError failed) {
      // A queue without a leader would stall every commit behind it, so the calling thread leads
      // instead. All threads busy is the bound working (quiet); fewer threads than the bound
      // means one could not be made (OutOfMemoryError "unable to create native thread", or the
      // factory gave none), which the operator must hear of.
      if (failed instanceof OutOfMemoryError || e.getPoolSize() < MAX_THREADS) {
        LOG.log(
            System.Logger.Level.WARNING,
            "no group-commit thread could be started; the calling thread leads the queue",
            failed);
      }
      return false;
    }
  }

  /**
   * Leads one group: writes and syncs every queued step, then passes the lead on before completing
   * the group's writers, so that the next group's write and sync overlap the completions (which
   * answer requests, and took about as long as a sync when the leader ran them first).
   *
   * <p>Who leads the next group, when steps are queued:
   *
   * <ul>
   *   <li>a writer waiting in {@link #write}, if the queue holds one (it is woken to lead);
   *   <li>else this thread, if it is one of the writer's own ({@code self} null) and its group has
   *       no completions to run ({@link #LEAD_AGAIN});
   *   <li>else another of the writer's own threads, handed the lead at once, so that the next
   *       group's write and sync start while this thread runs the completions (or returns to its
   *       synchronous caller). Releasing the lead instead made the next group wait for the next
   *       step to arrive or for the completions to end: handing it on gave the service on RocksDB
   *       1-11% more requests/s in six alternating rounds, with 0.1-0.2 fewer context switches per
   *       request. If no thread can take it, this thread leads on after its completions.
   * </ul>
   *
   * <p>With nothing queued the lead is released, and the next writer to arrive takes it.
   *
   * @return {@link #LEAD_AGAIN} if the calling thread holds the lead for queued steps, else {@link
   *     #STOP}
   */
  private int leadOne(@Nullable Pending self) {
    ArrayList<Pending> group;
    RocksDBException error = null;
    lock.lock();
    try {
      if (maxDelayNanos > 0 && preparing.get() > 0) {
        // An internal batching bound, not a semantic time: System.nanoTime is right here.
        long deadline = System.nanoTime() + maxDelayNanos;
        long left;
        while (preparing.get() > 0 && (left = deadline - System.nanoTime()) > 0) {
          arrived.awaitNanos(Math.min(left, TimeUnit.MICROSECONDS.toNanos(50)));
        }
      }
      group = queue;
      queue = new ArrayList<>(Math.max(8, group.size()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      group = queue;
      queue = new ArrayList<>();
    } finally {
      lock.unlock();
    }
    boolean written = false;
    boolean completions = false;
    boolean handOn = false;
    int after;
    try {
      for (Pending p : group) {
        if (p.step != null) {
          p.step.appendTo(groupBatch);
        }
        completions |= p.done != null;
      }
      if (groupBatch.count() > 0) {
        // Written unsynced, then synced apart: a synced write would hold RocksDB's write queue
        // for the whole sync, stalling every unsynced write (sliding refreshes, outbox bookkeeping)
        // behind it; SyncWAL lets them proceed while the WAL is being synced.
        db.write(buffered, groupBatch);
      }
      Runnable hook = beforeGroupSync;
      if (hook != null) {
        hook.run();
      }
      db.syncWal();
      written = true;
    } catch (RocksDBException e) {
      error = e;
    } catch (RuntimeException e) {
      // Unexpected: every writer of the group (the leader too) is told its step failed, and the
      // lead still passes on below, so the queue never stalls.
      LOG.log(System.Logger.Level.WARNING, "the group-commit leader failed", e);
    } finally {
      groupBatch.clear();
      if (!written && error == null) {
        // The writers the leader covered must not believe their steps were written.
        error = new RocksDBException("the group-commit leader failed before its write completed");
      }
      Pending waiting = null;
      lock.lock();
      try {
        for (Pending p : queue) {
          if (p.thread != null) {
            waiting = p; // a waiting writer leads the next group, whatever its place in the queue
            break;
          }
        }
        if (waiting != null) {
          after = STOP; // the lead passes to it, still active: no writer can start a second group
        } else if (!queue.isEmpty() && !completions && self == null) {
          after = LEAD_AGAIN;
        } else if (!queue.isEmpty()) {
          after = STOP; // handed on below, still active: the next group starts at once
          handOn = true;
        } else {
          after = STOP;
          leaderActive = false;
        }
      } finally {
        lock.unlock();
      }
      if (waiting != null) {
        waiting.finish(Pending.LEAD, true);
      }
      if (handOn && !leadInBackground()) {
        after = LEAD_AGAIN; // no other thread could take it: lead on after the completions
      }
      // Waiting writers first: queued steps' completions may take longer (they answer requests).
      for (Pending p : group) {
        if (p.thread != null) {
          p.error = error;
          p.finish(Pending.DONE, p != self);
        }
      }
      for (Pending p : group) {
        if (p.done != null) {
          try {
            p.done.accept(error);
          } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "a group commit's completion failed", e);
          }
        }
      }
    }
    return after;
  }

  /** For tests only: how many steps wait in the queue for the next group. */
  int queuedForTest() {
    lock.lock();
    try {
      return queue.size();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    ThreadPoolExecutor e;
    synchronized (this) {
      e = background;
      background = null;
    }
    if (e != null) {
      e.shutdown(); // idle by now: the store closes once no step is queued
    }
    groupBatch.close();
    synced.close();
    buffered.close();
  }

  /** One writer waiting in the group-commit queue; a null step only waits for a sync. */
  private static final class Pending {
    static final int WAITING = 0;
    static final int DONE = 1;
    static final int LEAD = 2;

    final @Nullable Mutations step;
    final @Nullable Thread thread; // a writer waiting in write(); null for a queued step
    final @Nullable Consumer<@Nullable RocksDBException> done; // a queued step's completion
    volatile int state = WAITING;
    @Nullable RocksDBException error; // written before state, read after it

    Pending(
        @Nullable Mutations step,
        @Nullable Thread thread,
        @Nullable Consumer<@Nullable RocksDBException> done) {
      this.step = step;
      this.thread = thread;
      this.done = done;
    }

    void finish(int to, boolean wake) {
      state = to;
      if (wake && thread != null) {
        LockSupport.unpark(thread);
      }
    }
  }
}
