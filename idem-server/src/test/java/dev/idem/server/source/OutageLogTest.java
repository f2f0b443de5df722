package dev.idem.server.source;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.idem.DedupKey;
import dev.idem.ManualTimeSource;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.support.LogCapture;
import dev.idem.server.support.TestParts;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A store outage seen by a broker source is logged as one WARN when it starts, a reminder at most
 * every 30 s, and one INFO when the store answers again: never one line per event.
 */
class OutageLogTest {
  final ManualTimeSource time = new ManualTimeSource();
  final OutageLog outage =
      new OutageLog(
          LoggerFactory.getLogger("dev.idem.server.source.OutageLogTest"),
          "orders",
          "test source",
          "nothing is acknowledged",
          time,
          OutageLog.DEFAULT_REMINDER);
  final DedupKey key = TestParts.keyOf("k");

  List<Outcome> down(int n) {
    Outcome u =
        new Outcome.Unavailable(
            key, "store_unavailable", "the dedup store is unavailable (connection refused)", 5);
    return java.util.Collections.nCopies(n, u);
  }

  List<Outcome> up(int n) {
    return java.util.Collections.nCopies(n, new Outcome.Accepted(key, null, false));
  }

  @Test
  void anOutageIsOneWarningThenRemindersThenOneInfo() {
    try (LogCapture logs = LogCapture.idem()) {
      // given a store that stops answering: 100 batches of 50 events, 1 s apart
      for (int i = 0; i < 100; i++) {
        outage.observe(down(50), 50);
        time.advance(Duration.ofSeconds(1));
      }
      // when it answers again
      outage.observe(up(50), 0);
      outage.observe(up(50), 0);

      // then: one warning at the start, one reminder per 30 s, one info at the end
      List<String> lines = logs.lines(Level.INFO);
      assertThat(lines).hasSize(1 + 3 + 1);
      assertThat(lines.get(0))
          .startsWith("WARN pipeline=orders test source: the dedup store is unavailable")
          .contains("connection refused")
          .contains("nothing is acknowledged")
          .contains("50 events put back so far");
      assertThat(lines.get(1))
          .startsWith("WARN")
          .contains("still unavailable after 30 s")
          .contains("1550 events put back since the outage began, 1500 since the last line");
      assertThat(lines.get(3)).contains("still unavailable after 90 s");
      assertThat(lines.get(4))
          .startsWith("INFO pipeline=orders test source: the dedup store answers again after")
          .contains("5000 events were put back");
    }
    assertThat(outage.down()).isFalse();
  }

  @Test
  void aStoreThatAnswersLogsNothing() {
    try (LogCapture logs = LogCapture.idem()) {
      for (int i = 0; i < 10; i++) {
        outage.observe(up(100), 0);
      }
      assertThat(logs.lines(Level.INFO)).isEmpty();
    }
  }

  @Test
  void rejectionsAloneDoNotEndAnOutageTheStoreWasNotAsked() {
    outage.observe(down(3), 3);
    Outcome bad = new Outcome.Rejected(Outcome.Rejection.BAD_INPUT, "malformed_json", "not JSON");

    outage.observe(List.of(bad, bad), 0);

    assertThat(outage.down()).isTrue();
    assertThat(outage.putBack()).isEqualTo(3);
    outage.observe(List.of(new Outcome.Duplicate(key, null)), 0);
    assertThat(outage.down()).isFalse();
  }

  @Test
  void aSecondOutageIsAnnouncedAgain() {
    try (LogCapture logs = LogCapture.idem()) {
      outage.observe(down(1), 1);
      outage.observe(up(1), 0);
      outage.observe(down(2), 2);

      assertThat(logs.lines(Level.WARN))
          .hasSize(2)
          .allSatisfy(l -> assertThat(l).contains("the dedup store is unavailable"));
      assertThat(logs.lines(Level.WARN).get(1)).contains("2 events put back so far");
    }
  }
}
