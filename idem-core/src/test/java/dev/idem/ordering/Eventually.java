package dev.idem.ordering;

import java.time.Duration;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionFactory;

/** Awaitility polling every millisecond from the start: the conditions here hold within micros. */
final class Eventually {
  private Eventually() {}

  static ConditionFactory await() {
    return Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(1));
  }
}
