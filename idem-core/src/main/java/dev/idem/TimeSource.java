package dev.idem;

import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;
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
   *
   * @return the system time source
   */
  static TimeSource system() {
    return SystemTimeSource.INSTANCE;
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
  public long monotonicNanos() {
    return System.nanoTime();
  }
}
