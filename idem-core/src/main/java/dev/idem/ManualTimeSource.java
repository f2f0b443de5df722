package dev.idem;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link TimeSource} that moves only when told to: for tests of TTLs, leases and lock timeouts
 * without sleeping. Both clocks advance together. Thread-safe.
 */
public final class ManualTimeSource implements TimeSource {
  private final AtomicLong wallMillis;
  private final AtomicLong nanos = new AtomicLong();

  /**
   * Starts at the given wall time.
   *
   * @param start the initial wall time
   */
  public ManualTimeSource(Instant start) {
    this.wallMillis = new AtomicLong(start.toEpochMilli());
  }

  /** Starts at 2026-01-01T00:00:00Z. */
  public ManualTimeSource() {
    this(Instant.parse("2026-01-01T00:00:00Z"));
  }

  @Override
  public long wallMillis() {
    return wallMillis.get();
  }

  @Override
  public long monotonicNanos() {
    return nanos.get();
  }

  /**
   * Moves both clocks forward.
   *
   * @param step how far; must not be negative
   */
  public void advance(Duration step) {
    if (step.isNegative()) {
      throw new IllegalArgumentException("time only moves forward, got " + step);
    }
    wallMillis.addAndGet(step.toMillis());
    nanos.addAndGet(step.toNanos());
  }

  /**
   * Moves both clocks forward by milliseconds.
   *
   * @param millis how far; must not be negative
   */
  public void advanceMillis(long millis) {
    advance(Duration.ofMillis(millis));
  }
}
