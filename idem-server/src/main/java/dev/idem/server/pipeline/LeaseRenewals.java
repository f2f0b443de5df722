package dev.idem.server.pipeline;

import dev.idem.DedupKey;
import dev.idem.Reservation;
import dev.idem.TimeSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The reservations of one pipeline whose work is running, renewed by one periodic sweep instead of
 * a timer task per event. A reserved event {@link #hold}s its reservation while its work runs and
 * closes the returned {@link Held} when it is settled; the sweep, every half renewal period, renews
 * each held reservation whose last renewal (or start) is at least one period ago. So a lease is
 * renewed between one and one and a half periods after the previous renewal (with the pipeline's
 * period of a third of the lease: before half the lease has run), and an event costs a short locked
 * insert and removal in one of a few lists, not a timer task scheduled and cancelled (with the
 * timer thread woken each time the task becomes the earliest).
 *
 * <p>The sweep runs on the given timer; a renewal that reports the lease lost stops renewing that
 * reservation (the work then finds the lease ran out at its next check). Thread-safe.
 */
final class LeaseRenewals {
  private static final int STRIPES = 8;

  /** What renews one reservation; false when it must not be renewed again. */
  interface Renewer {
    boolean renew(Reservation r, DedupKey key);
  }

  private final ScheduledExecutorService timer;
  private final long periodNanos;
  private final TimeSource time;
  private final Renewer renewer;
  private final Held[] heads = new Held[STRIPES];
  private final AtomicBoolean started = new AtomicBoolean();

  /**
   * Creates the set; its sweep starts with the first held reservation.
   *
   * @param timer runs the sweep
   * @param periodMillis renew a reservation when its last renewal is this old, at least 2
   * @param time the clock that judges the age
   * @param renewer renews one reservation
   */
  LeaseRenewals(
      ScheduledExecutorService timer, long periodMillis, TimeSource time, Renewer renewer) {
    this.timer = timer;
    this.periodNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(2, periodMillis));
    this.time = time;
    this.renewer = renewer;
    for (int i = 0; i < STRIPES; i++) {
      heads[i] = new Held(null, null, 0, null);
      heads[i].prev = heads[i];
      heads[i].next = heads[i];
    }
  }

  /**
   * Holds a reservation for renewal until the returned handle is closed.
   *
   * @param r the reservation
   * @param key its key (for the log)
   * @return the handle to close when the reservation is settled
   */
  Held hold(Reservation r, DedupKey key) {
    if (!started.get() && started.compareAndSet(false, true)) {
      start();
    }
    Held head = heads[(int) (Thread.currentThread().getId() & (STRIPES - 1))];
    Held h = new Held(r, key, time.monotonicNanos(), head);
    synchronized (head) {
      h.prev = head.prev;
      h.next = head;
      head.prev.next = h;
      head.prev = h;
    }
    return h;
  }

  private void start() {
    long every = Math.max(1, TimeUnit.NANOSECONDS.toMillis(periodNanos) / 2);
    try {
      timer.scheduleWithFixedDelay(this::sweep, every, every, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // Shutting down: the lease alone bounds the work.
    }
  }

  /** Renews every held reservation that is due; never throws (that would end the sweep). */
  void sweep() {
    long now = time.monotonicNanos();
    List<Held> due = new ArrayList<>();
    for (Held head : heads) {
      synchronized (head) {
        for (Held h = head.next; h != head; h = h.next) {
          if (!h.stopped && now - h.renewedAt >= periodNanos) {
            due.add(h);
          }
        }
      }
    }
    for (Held h : due) {
      Reservation r = h.reservation;
      DedupKey key = h.key;
      if (r == null || key == null || h.closed) {
        continue;
      }
      boolean again;
      try {
        again = renewer.renew(r, key);
      } catch (RuntimeException e) {
        again = false;
      }
      if (again) {
        h.renewedAt = time.monotonicNanos();
      } else {
        h.stopped = true;
      }
    }
  }

  /** How many reservations are held now (for tests). */
  int size() {
    int n = 0;
    for (Held head : heads) {
      synchronized (head) {
        for (Held h = head.next; h != head; h = h.next) {
          n++;
        }
      }
    }
    return n;
  }

  /** One held reservation; {@link #close} removes it (idempotent). */
  static final class Held implements AutoCloseable {
    final @Nullable Reservation reservation;
    final @Nullable DedupKey key;
    private final @Nullable Held head;
    volatile long renewedAt;
    volatile boolean stopped;
    volatile boolean closed;
    @Nullable Held prev;
    @Nullable Held next;

    private Held(
        @Nullable Reservation reservation,
        @Nullable DedupKey key,
        long renewedAt,
        @Nullable Held head) {
      this.reservation = reservation;
      this.key = key;
      this.renewedAt = renewedAt;
      this.head = head;
    }

    @Override
    public void close() {
      Held list = head;
      if (list == null) {
        return;
      }
      synchronized (list) {
        if (closed) {
          return;
        }
        closed = true;
        Held p = prev;
        Held n = next;
        if (p != null && n != null) {
          p.next = n;
          n.prev = p;
        }
        prev = null;
        next = null;
      }
    }
  }
}
