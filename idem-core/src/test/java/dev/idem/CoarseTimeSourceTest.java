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

  @Test
  void aManualSourcesLaggingReadingIsItsExactOne() {
    ManualTimeSource manual = new ManualTimeSource();
    manual.advanceMillis(1_234);
    assertThat(manual.laggingWallMillis()).isEqualTo(manual.wallMillis());
  }
}
