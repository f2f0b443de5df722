package dev.idem;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Where Idem reads time: wall-clock milliseconds for everything stored (TTLs, leases, commit times)
 * and a monotonic nanosecond counter for local waits and latency. Nothing in Idem reads a static
 * clock, so tests can step time with a manual source.
 *
 * <p>Stores that are shared by several machines compare the wall times written by all of them; keep
 * those machines' clocks synchronised (NTP), with skew well below the shortest lease.
 */
public interface TimeSource {

  /**
   * Returns the current wall-clock time.
   *
   * @return milliseconds since the epoch
   */
  long wallMillis();

  /**
   * Returns the wall-clock time for a decision that a late clock only makes more cautious: a {@link
   * Deduplicator}'s reserve. Judged by a late clock, a committed key and a running lease stay alive
   * a little longer (never shorter), and a new lease, which runs from this reading, ends a little
   * earlier by {@link #wallMillis()} (its holder's commit and extend are judged by {@code
   * wallMillis()}, so a holder never keeps a key past its lease). May lag {@code wallMillis()};
   * must not run ahead of it.
   *
   * <p>The default reads {@link #wallMillis()}. The {@linkplain #system() system} time source
   * answers from the {@linkplain #coarse() coarse clock}'s field, so that a reserve plus commit
   * reads the system clock once (in the commit, which proves the lease) rather than twice.
   *
   * @return milliseconds since the epoch, at most {@link #wallMillis()}
   */
  default long laggingWallMillis() {
    return wallMillis();
  }

  /**
   * Returns a monotonic counter for measuring elapsed time; only differences are meaningful.
   *
   * @return nanoseconds from an arbitrary origin
   */
  long monotonicNanos();

  /**
   * Returns the current wall-clock time as an {@link Instant}.
   *
   * @return now
   */
  default Instant now() {
    return Instant.ofEpochMilli(wallMillis());
  }

  /**
   * Returns the system clocks ({@link System#currentTimeMillis()} and {@link System#nanoTime()}).
   * Its {@link #laggingWallMillis()} reads the {@linkplain #coarse() coarse clock} (which starts
   * that clock's thread on first use).
   *
   * @return the system time source
   */
  static TimeSource system() {
    return SystemTimeSource.INSTANCE;
  }

  /**
   * Returns a wall clock that costs a field read instead of a system call: one shared daemon thread
   * ({@code idem-coarse-clock}, started on first use) copies {@link System#currentTimeMillis()}
   * into a field every millisecond while the clock is read; after a second without a read it parks,
   * and the next read reads the system clock itself and wakes it. The monotonic counter is {@link
   * System#nanoTime()}.
   *
   * <p>For in-memory deduplication at millions of events per second, where reading the system clock
   * twice per event (reserve and commit) is a large share of the cost. The price: the time read may
   * lag the system clock by a millisecond or so, more when the machine is overloaded and the thread
   * runs late, which only makes leases and windows that much longer. It never goes backwards, even
   * when the system clock is stepped back.
   *
   * @return the shared coarse time source
   */
  static TimeSource coarse() {
    return CoarseTimeSource.INSTANCE;
  }

  /**
   * Combines a wall clock and a monotonic counter.
   *
   * @param wall the wall clock
   * @param monotonicNanos the monotonic counter
   * @return a time source reading both
   */
  static TimeSource of(InstantSource wall, LongSupplier monotonicNanos) {
    Objects.requireNonNull(wall, "wall");
    Objects.requireNonNull(monotonicNanos, "monotonicNanos");
    return new TimeSource() {
      @Override
      public long wallMillis() {
        return wall.millis();
      }

      @Override
      public long monotonicNanos() {
        return monotonicNanos.getAsLong();
      }
    };
  }
}

/** The system clocks. */
enum SystemTimeSource implements TimeSource {
  INSTANCE;

  @Override
  public long wallMillis() {
    return System.currentTimeMillis();
  }

  @Override
  public long laggingWallMillis() {
    // At most a millisecond or so behind (more when the coarse clock's thread runs late), never
    // ahead unless the system clock was stepped back, which breaks every lease anyway.
    return CoarseTimeSource.INSTANCE.wallMillis();
  }

  @Override
  public long monotonicNanos() {
    return System.nanoTime();
  }
}

/**
 * The coarse clock: a field refreshed every millisecond by one daemon thread while it is read.
 * After {@link #IDLE_TICKS} ticks with no read the thread parks until the next read, which reads
 * the system clock itself and wakes it: an idle process does not wake up a thousand times a second.
 */
final class CoarseTimeSource implements TimeSource {
  /** The ticks with no read after which the shared clock's thread parks: one second. */
  static final int IDLE_TICKS = 1_000;

  static final CoarseTimeSource INSTANCE = new CoarseTimeSource(IDLE_TICKS);

  private static final long TICK_NANOS = 1_000_000;

  /** {@link #demand}: read since the last tick. */
  private static final int READ = 0;

  /** {@link #demand}: not read since the last tick. */
  private static final int UNREAD = 1;

  /** {@link #demand}: the ticker parked; the next read refreshes the field and wakes it. */
  private static final int ASLEEP = 2;

  private static final VarHandle MILLIS;
  private static final VarHandle DEMAND;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      MILLIS = lookup.findVarHandle(CoarseTimeSource.class, "millis", long.class);
      DEMAND = lookup.findVarHandle(CoarseTimeSource.class, "demand", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  // Both fields are read by every wallMillis(): declared together, they share a cache line. The
  // readers write demand at most once per tick (the first read after it), the ticker once per tick.
  private volatile long millis = System.currentTimeMillis();
  private volatile int demand = READ;

  private final int idleTicks;
  private final Thread ticker;

  /**
   * Starts a clock and its thread.
   *
   * @param idleTicks ticks with no read after which the thread parks until the next read
   */
  CoarseTimeSource(int idleTicks) {
    this.idleTicks = idleTicks;
    this.ticker = new Thread(this::tick, "idem-coarse-clock");
    ticker.setDaemon(true);
    ticker.start();
  }

  private void tick() { // runs until the JVM exits (a daemon thread)
    int unread = 0;
    while (true) {
      LockSupport.parkNanos(TICK_NANOS);
      advanceTo(System.currentTimeMillis());
      if (demand == READ) {
        demand = UNREAD;
        unread = 0;
      } else if (++unread >= idleTicks && DEMAND.compareAndSet(this, UNREAD, ASLEEP)) {
        while (demand == ASLEEP) {
          LockSupport.park(this); // a read sets READ, then unparks (a permit if not yet parked)
        }
        unread = 0;
      }
    }
  }

  /** Moves the field forward to {@code now}, never back (the ticker and waking readers race). */
  private void advanceTo(long now) {
    long seen = millis;
    while (now > seen && !MILLIS.compareAndSet(this, seen, now)) {
      seen = millis;
    }
  }

  @Override
  public long wallMillis() {
    int d = demand;
    if (d != READ) {
      return d == ASLEEP ? wake() : markRead();
    }
    return millis;
  }

  private long markRead() {
    demand = READ;
    return millis;
  }

  /** The first read after the ticker parked: the field is stale, so read the system clock. */
  private long wake() {
    advanceTo(System.currentTimeMillis());
    if (DEMAND.compareAndSet(this, ASLEEP, READ)) {
      LockSupport.unpark(ticker);
    }
    return millis;
  }

  /** Whether the ticker is parked until the next read (for tests). */
  boolean asleep() {
    return demand == ASLEEP;
  }

  @Override
  public long monotonicNanos() {
    return System.nanoTime();
  }
}
