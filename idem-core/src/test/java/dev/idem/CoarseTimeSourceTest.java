package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CoarseTimeSourceTest {

  @Test
  void followsTheSystemClockAndNeverGoesBackwards() {
    TimeSource coarse = TimeSource.coarse();
    long first = coarse.wallMillis();
    long systemAtStart = System.currentTimeMillis();

    // it is near the system clock, and it moves forward by itself
    assertThat(Math.abs(first - systemAtStart)).isLessThan(1_000);
    await().atMost(Duration.ofSeconds(5)).until(() -> coarse.wallMillis() > systemAtStart + 20);

    long previous = coarse.wallMillis();
    for (int i = 0; i < 100_000; i++) {
      long now = coarse.wallMillis();
      assertThat(now).isGreaterThanOrEqualTo(previous);
      previous = now;
    }
    assertThat(TimeSource.coarse()).isSameAs(coarse);
  }

  @Test
  void theSystemSourcesLaggingReadingIsTheCoarseClockAndNeverAheadOfTheSystemClock() {
    TimeSource system = TimeSource.system();
    for (int i = 0; i < 100_000; i++) {
      long lagging = system.laggingWallMillis();
      assertThat(lagging).isLessThanOrEqualTo(system.wallMillis());
    }
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> system.laggingWallMillis() >= TimeSource.coarse().wallMillis());
    long systemAtStart = System.currentTimeMillis();
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> system.laggingWallMillis() > systemAtStart + 20);
  }

  /**
   * An idle clock's thread parks (an idle service does not wake a thousand times a second); the
   * first read after that is fresh, not the time the thread parked at, and wakes the thread.
   */
  @Test
  void anUnreadClockParksItsThreadAndTheNextReadIsFreshAndWakesIt() {
    CoarseTimeSource clock = new CoarseTimeSource(20);
    long start = clock.wallMillis();

    await().atMost(Duration.ofSeconds(10)).until(clock::asleep);
    long parkedBy = System.currentTimeMillis();
    // let the field go stale by 50 ms (polling the system clock, not this one: a read wakes it)
    await()
        .pollInterval(Duration.ofMillis(10))
        .atMost(Duration.ofSeconds(5))
        .until(() -> System.currentTimeMillis() >= parkedBy + 50);
    assertThat(clock.asleep()).isTrue();
    long before = System.currentTimeMillis();
    long read = clock.wallMillis();

    assertThat(read).isGreaterThanOrEqualTo(before).isGreaterThanOrEqualTo(start);
    assertThat(read).isLessThanOrEqualTo(System.currentTimeMillis());
    assertThat(clock.asleep()).isFalse();
    // the thread ticks again: the field moves without another wake-up
    await().atMost(Duration.ofSeconds(5)).until(() -> clock.wallMillis() > read + 20);
    assertThat(clock.asleep()).isFalse();
    long previous = clock.wallMillis();
    for (int i = 0; i < 100_000; i++) {
      long now = clock.wallMillis();
      assertThat(now).isGreaterThanOrEqualTo(previous);
      previous = now;
    }
  }

  /** Readers that wake the clock while it ticks again never see it go backwards. */
  @Test
  void readersWakingTheClockConcurrentlyNeverSeeItGoBackwards() throws Exception {
    CoarseTimeSource clock = new CoarseTimeSource(1);
    java.util.concurrent.atomic.AtomicReference<String> broken =
        new java.util.concurrent.atomic.AtomicReference<>();
    Thread[] readers = new Thread[2];
    for (int t = 0; t < readers.length; t++) {
      readers[t] =
          new Thread(
              () -> {
                long previous = clock.wallMillis();
                for (int i = 0; i < 2_000; i++) {
                  long now = clock.wallMillis();
                  if (now < previous) {
                    broken.set(now + " after " + previous);
                  }
                  previous = now;
                  java.util.concurrent.locks.LockSupport.parkNanos(
                      (i % 7) * 300_000L); // gaps of 0 to 1.8 ms: the clock parks between reads
                }
              });
      readers[t].start();
    }
    for (Thread r : readers) {
      r.join();
    }
    assertThat(broken.get()).isNull();
  }

  @Test
  void aManualSourcesLaggingReadingIsItsExactOne() {
    ManualTimeSource manual = new ManualTimeSource();
    manual.advanceMillis(1_234);
    assertThat(manual.laggingWallMillis()).isEqualTo(manual.wallMillis());
  }
}
