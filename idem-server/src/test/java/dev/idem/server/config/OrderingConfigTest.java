package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Issue 11: {@code ordering.sequence}, {@code gap_timeout}, {@code max_attempts}, {@code
 * on_failure}.
 */
class OrderingConfigTest {

  private static ConfigException failure(String yaml) {
    try {
      ConfigLoader.parse("idem.yaml", yaml, n -> null);
    } catch (ConfigException e) {
      return e;
    }
    throw new AssertionError("expected a ConfigException for:\n" + yaml);
  }

  @Test
  void sequenceModeAndPoisonKeysParseWithTheirDefaults() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup: { key: id }
                ordering: { key: entity, sequence: body.version, gap_timeout: 5s }
                deliver: { stdout: {} }
              - id: q
                source: { webhook: { path: /q } }
                dedup: { key: id }
                ordering: { key: entity, max_attempts: 3, on_failure: block }
                deliver: { stdout: {} }
            """,
            n -> null);

    OrderingSettings p = c.pipelines().get(0).ordering();
    assertThat(p.sequence()).isEqualTo("body.version");
    assertThat(p.gapTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(p.maxAttempts()).isEqualTo(OrderingSettings.DEFAULT_MAX_ATTEMPTS);
    assertThat(p.onFailure()).isEqualTo(OrderingFailure.DEAD_LETTER);
    OrderingSettings q = c.pipelines().get(1).ordering();
    assertThat(q.sequence()).isNull();
    assertThat(q.gapTimeout()).isEqualTo(OrderingSettings.DEFAULT_GAP_TIMEOUT);
    assertThat(q.maxAttempts()).isEqualTo(3);
    assertThat(q.onFailure()).isEqualTo(OrderingFailure.BLOCK);
  }

  @Test
  void blockIsAcceptedWithAsyncDelivery() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: a
                source: { webhook: { path: /a } }
                dedup: { key: id }
                ordering: { key: entity, on_failure: block }
                deliver: { mode: async, retries: 2, stdout: {} }
            """,
            n -> null);

    assertThat(c.pipelines().get(0).ordering().onFailure()).isEqualTo(OrderingFailure.BLOCK);
  }

  @Test
  void badValuesAreLocatedProblemsSayingWhatToDo() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                ordering:
                  key: entity
                  sequence: "a..b"
                  gap_timeout: 2h
                  max_attempts: 0
                  on_failure: retry
                deliver: { stdout: {} }
              - id: q
                source: { webhook: { path: /q } }
                ordering: { key: entity, gap_timeout: 1s }
                deliver: { stdout: {} }
              - id: r
                source: { webhook: { path: /r } }
                ordering: { key: entity, sequence: version }
                deliver: { stdout: {} }
              - id: s
                source: { webhook: { path: /s } }
                ordering: { key: entity, on_failure: block }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::path)
        .containsExactly(
            "pipelines[0].ordering.sequence",
            "pipelines[0].ordering.gap_timeout",
            "pipelines[0].ordering.max_attempts",
            "pipelines[0].ordering.on_failure",
            "pipelines[1].ordering.gap_timeout",
            "pipelines[2].ordering.sequence",
            "pipelines[3].ordering.on_failure");
    assertThat(e.getMessage())
        .contains("must be at most 1h")
        .contains("must be from 1 to 1000, got 0")
        .contains("applies only with ordering.sequence")
        .contains("needs a dedup step")
        .contains("block needs a dedup step");
  }
}
