package dev.idem.server.source.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.idem.ManualTimeSource;
import dev.idem.server.support.LogCapture;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Rejection lines are bounded per pipeline and second, and say how many were left out. */
class RejectionLogTest {
  final ManualTimeSource time = new ManualTimeSource();

  @Test
  void aFloodIsCutToTheLimitPerSecondAndTheNextLineCountsWhatWasLeftOut() {
    try (LogCapture logs = LogCapture.idem()) {
      // given a limit of 3 lines a second
      RejectionLog log =
          new RejectionLog(LoggerFactory.getLogger("dev.idem.test.rejections"), "gh", time, 3);

      // when 10 rejections come within one second, then one more a second later
      for (int i = 0; i < 10; i++) {
        String id = "d-" + i;
        log.rejected("signature", "INVALID", () -> id, 401, "no signature matches");
        time.advance(Duration.ofMillis(50));
      }
      time.advance(Duration.ofSeconds(1));
      log.rejected("signature", "STALE", () -> "d-late", 401, "timestamp is 400s in the past");

      // then 3 lines, then one that says 7 were not logged
      List<String> lines = logs.lines(l -> l.contains("rejected pipeline=gh"));
      assertThat(lines).hasSize(4);
      assertThat(lines.get(0))
          .isEqualTo(
              "WARN rejected pipeline=gh check=signature reason=INVALID delivery=d-0 status=401:"
                  + " no signature matches");
      assertThat(lines.get(2)).contains("delivery=d-2");
      assertThat(lines.get(3))
          .contains("reason=STALE delivery=d-late")
          .contains("timestamp is 400s in the past")
          .contains("(7 earlier rejections of this pipeline were not logged, over 3 a second)");
      assertThat(log.suppressed()).isZero();
    }
  }

  @Test
  void aLineLeftOutDoesNotReadTheDeliveryId() {
    RejectionLog log =
        new RejectionLog(LoggerFactory.getLogger("dev.idem.test.rejections"), "gh", time, 1);
    java.util.concurrent.atomic.AtomicInteger reads =
        new java.util.concurrent.atomic.AtomicInteger();

    for (int i = 0; i < 5; i++) {
      log.rejected("signature", "INVALID", () -> "d-" + reads.incrementAndGet(), 401, "no");
    }

    assertThat(reads).hasValue(1);
    assertThat(log.suppressed()).isEqualTo(4);
  }

  @Test
  void whatTheSenderSentCannotForgeALine() {
    try (LogCapture logs = LogCapture.idem()) {
      RejectionLog log =
          new RejectionLog(LoggerFactory.getLogger("dev.idem.test.rejections"), "gh", time, 10);

      log.rejected(
          "signature", "MISSING", () -> "x\nWARN fake line " + "a".repeat(200), 401, "a\r\nb");

      String line = logs.lines(Level.WARN).get(0);
      assertThat(line).doesNotContain("\n").doesNotContain("\r");
      assertThat(line).contains("delivery=x?WARN?fake?line?aaaa").contains("...").contains("a??b");
      assertThat(line.length()).isLessThan(400);
    }
  }
}
