package dev.idem.store.jdbc;

import dev.idem.TimeSource;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.SettleResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Undoes reserves whose outcome is unknown: the statement was sent, but the connection timed out or
 * broke before the answer came, so the in-flight row may be in the table although its caller holds
 * no reservation. Such a row would block its key until its lease ends (minutes in the service): a
 * sender's retry would be answered "in flight" for all that time.
 *
 * <p>Each such reserve gets fenced releases with its own token, on another connection, in the
 * background: it can remove only the row that reserve wrote, never a later holder's (another token)
 * or a commit (another state). The connection that sent the reserve is gone, so a release cannot be
 * ordered after it the way Redis orders one on the same connection; instead the first attempt waits
 * until the server has ended the reserve's statement (its own statement timeout, the store timeout,
 * is past; plus the driver's socket margin), and more attempts follow at doubling delays until one
 * removes a row, or the lease is over (the lease heals the key then anyway), or {@link
 * #MAX_ATTEMPTS} were made. The later attempts cover a statement that a stalled network delivered
 * late, and attempts that failed because the database was still unreachable. Each attempt is one
 * primary-key {@code DELETE}.
 *
 * <p>Bounded: at most {@link #MAX_PENDING} reserves wait for their undo at a time (more are left to
 * their leases, with one warning per burst), and closing the store drops the pending attempts.
 */
final class ReserveUndo implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ReserveUndo.class.getName());

  /** Attempts per reserve, the first included. */
  static final int MAX_ATTEMPTS = 5;

  /** Reserves waiting for their undo at most; beyond, their leases heal them. */
  static final int MAX_PENDING = 10_000;

  private final String store;
  private final TimeSource time;
  private final long firstDelayMillis;
  private final Function<ReleaseRequest, SettleResult> release;
  private final AtomicInteger pending = new AtomicInteger();
  private @Nullable ScheduledExecutorService executor; // guarded by this; started on first use
  private boolean closed; // guarded by this
  private boolean warned; // guarded by this: one warning per burst of dropped undos

  /**
   * @param store the store's description, for messages and the thread's name
   * @param timeout the store timeout (the server's statement timeout)
   * @param socketMargin how much longer the driver waits than the server
   * @param time the clock of the release requests and the lease check
   * @param release the store's fenced release
   */
  ReserveUndo(
      String store,
      Duration timeout,
      Duration socketMargin,
      TimeSource time,
      Function<ReleaseRequest, SettleResult> release) {
    this.store = store;
    this.time = time;
    this.firstDelayMillis = timeout.toMillis() + socketMargin.toMillis();
    this.release = release;
  }

  /** Schedules the undo of each reserve; returns at once. */
  void schedule(List<ReserveRequest> reserves) {
    for (ReserveRequest r : reserves) {
      if (pending.incrementAndGet() > MAX_PENDING) {
        pending.decrementAndGet();
        warnDropped();
        continue;
      }
      long leaseEnd = r.nowMillis() + r.leaseMillis();
      ReleaseRequest undo = new ReleaseRequest(r.scope(), r.key(), r.token(), r.nowMillis());
      if (!submit(undo, leaseEnd, 1, firstDelayMillis)) {
        pending.decrementAndGet();
      }
    }
  }

  /** How many reserves wait for their undo (for tests and health). */
  int pending() {
    return pending.get();
  }

  private boolean submit(ReleaseRequest undo, long leaseEnd, int attempt, long delayMillis) {
    ScheduledExecutorService e;
    synchronized (this) {
      if (closed) {
        return false;
      }
      e = executor;
      if (e == null) {
        String name = "idem-jdbc-reserve-undo";
        e =
            Executors.newSingleThreadScheduledExecutor(
                task -> {
                  Thread t = new Thread(task, name);
                  t.setDaemon(true);
                  return t;
                });
        executor = e;
      }
      if (pending.get() < MAX_PENDING / 2) {
        warned = false;
      }
    }
    try {
      e.schedule(
          () -> attempt(undo, leaseEnd, attempt, delayMillis), delayMillis, TimeUnit.MILLISECONDS);
      return true;
    } catch (RejectedExecutionException closing) {
      return false;
    }
  }

  private void attempt(ReleaseRequest undo, long leaseEnd, int attempt, long delayMillis) {
    long now = time.wallMillis();
    boolean again = attempt < MAX_ATTEMPTS && now + delayMillis * 2 < leaseEnd;
    if (now < leaseEnd) {
      try {
        ReleaseRequest at = new ReleaseRequest(undo.scope(), undo.key(), undo.token(), now);
        if (release.apply(at) == SettleResult.APPLIED) {
          LOG.log(
              System.Logger.Level.DEBUG,
              "{0}: removed the in-flight row of a reserve whose outcome was unknown (attempt {1})",
              store,
              attempt);
          again = false;
        }
      } catch (RuntimeException failed) { // a StoreException, or a bug: logged, tried again
        LOG.log(
            System.Logger.Level.DEBUG,
            "{0}: the undo of a reserve whose outcome is unknown failed (attempt {1}): {2}",
            store,
            attempt,
            failed.getMessage());
      }
    }
    if (!again || !submit(undo, leaseEnd, attempt + 1, delayMillis * 2)) {
      pending.decrementAndGet();
    }
  }

  private synchronized void warnDropped() {
    if (!warned) {
      warned = true;
      LOG.log(
          System.Logger.Level.WARNING,
          "{0}: more than {1} reserves whose outcome is unknown wait for their undo; the keys of"
              + " the others stay in flight until their leases end",
          store,
          MAX_PENDING);
    }
  }

  @Override
  public void close() {
    ScheduledExecutorService e;
    synchronized (this) {
      closed = true;
      e = executor;
      executor = null;
    }
    if (e != null) {
      e.shutdownNow();
    }
  }
}
