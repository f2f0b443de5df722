package dev.idem.server.deliver;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Waits between delivery attempts. Injected so that tests step through backoffs without sleeping.
 */
@FunctionalInterface
public interface Sleeper {

  /** Sleeps on the calling thread ({@link TimeUnit#sleep}). */
  Sleeper SYSTEM = duration -> TimeUnit.NANOSECONDS.sleep(duration.toNanos());

  /**
   * Waits.
   *
   * @param duration how long; zero returns at once
   * @throws InterruptedException if the thread is interrupted while waiting
   */
  void sleep(Duration duration) throws InterruptedException;
}
