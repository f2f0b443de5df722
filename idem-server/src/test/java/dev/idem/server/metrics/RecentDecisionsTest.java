package dev.idem.server.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
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

  @Test
  void aDecisionRecordedByKeyIsReadAsTheKeysHexDigits() {
    // Given a decision recorded with the key itself (the request path makes no hex string)
    RecentDecisions ring = new RecentDecisions(4);
    DedupKey key = DedupKey.ofWords(1, 2, 3, 0xabcdefL);
    ring.record(7, key, "committed");
    ring.record(8, "ff".repeat(32), "pass");

    // Then the console reads its 64 hex digits, next to entries recorded as text
    assertThat(ring.newest(10))
        .containsExactly(
            new RecentDecisions.Entry(8, "ff".repeat(32), "pass"),
            new RecentDecisions.Entry(7, key.toHex(), "committed"));
    assertThat(key.toHex()).hasSize(64).endsWith("abcdef");
  }
}
