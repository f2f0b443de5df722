package dev.idem.server.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RecentDecisionsTest {
  @Test
  void keepsTheNewestFirstAndOverwritesTheOldestWhenFull() {
    RecentDecisions ring = new RecentDecisions(3);
    assertThat(ring.newest(10)).isEmpty();

    for (int i = 1; i <= 5; i++) {
      ring.record(i, "d" + i, "pass");
    }

    assertThat(ring.newest(10))
        .extracting(RecentDecisions.Entry::digest)
        .containsExactly("d5", "d4", "d3");
    assertThat(ring.newest(2))
        .extracting(RecentDecisions.Entry::digest)
        .containsExactly("d5", "d4");
    assertThat(ring.newest(0)).isEmpty();
  }
}
