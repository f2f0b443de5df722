package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code source.nats} and {@code deliver.nats}: defaults, the default key, located problems. */
class NatsConfigTest {
  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, name -> null);
  }

  @Test
  void theDefaultsApplyAndTheDefaultKeyIsNatsMsgId() {
    IdemConfig c =
        parse(
            """
            store: { type: memory }
            pipelines:
              - id: orders
                source:
                  nats: { stream: ORDERS, durable: idem }
                dedup: { window: 1h }
                deliver:
                  nats: { subject: clean.orders }
            """);
    PipelineSettings p = c.pipelines().get(0);
    NatsSourceSettings n = (NatsSourceSettings) p.source();
    assertThat(n.url()).isEqualTo("nats://127.0.0.1:4222");
    assertThat(n.batch()).isEqualTo(100);
    assertThat(n.ackWait()).isEqualTo(Duration.ofSeconds(30));
    assertThat(n.maxDeliver()).isEqualTo(-1);
    assertThat(n.maxAttempts()).isEqualTo(5);
    assertThat(n.deadLetter()).isNull();
    assertThat(n.defaultKey().expressions()).containsExactly("header(\"Nats-Msg-Id\")");
    assertThat(p.webhook()).isNull();
    SinkSettings.Nats sink = (SinkSettings.Nats) p.deliver().sink();
    assertThat(sink.subject()).isEqualTo("clean.orders");
    assertThat(sink.stream()).isNull();
    assertThat(sink.timeout()).isEqualTo(Duration.ofSeconds(5));

    String printed = ConfigPrinter.toYaml(c);
    assertThat(printed).contains("nats:", "stream: ORDERS", "subject: clean.orders");
    assertThat(parse(printed).pipelines().get(0).source()).isEqualTo(n);
  }

  @Test
  void everyFieldIsReadAndTheUrlsPasswordIsMaskedWhenPrinted() {
    IdemConfig c =
        parse(
            """
            store: { type: memory }
            pipelines:
              - id: orders
                source:
                  nats:
                    url: nats://idem:s3cret@127.0.0.1:4222
                    stream: ORDERS
                    durable: idem-orders
                    subject: orders.>
                    batch: 500
                    ack_wait: 1m
                    max_deliver: 50
                    max_attempts: 3
                    dead_letter: dlq.orders
                    backoff: 2s
                    max_backoff: 1m
                    max_body: 256KiB
                    max_depth: 32
                deliver:
                  nats: { url: "nats://a:4222,nats://b:4222", subject: out, stream: OUT, timeout: 2s }
            """);
    NatsSourceSettings n = (NatsSourceSettings) c.pipelines().get(0).source();
    assertThat(n.subject()).isEqualTo("orders.>");
    assertThat(n.batch()).isEqualTo(500);
    assertThat(n.ackWait()).isEqualTo(Duration.ofMinutes(1));
    assertThat(n.maxDeliver()).isEqualTo(50);
    assertThat(n.maxAttempts()).isEqualTo(3);
    assertThat(n.deadLetter()).isEqualTo("dlq.orders");
    assertThat(n.backoff()).isEqualTo(Duration.ofSeconds(2));
    assertThat(n.maxBody()).isEqualTo(256 * 1024);
    assertThat(n.maxDepth()).isEqualTo(32);
    assertThat(ConfigPrinter.toYaml(c)).doesNotContain("s3cret");
    assertThat(n.toString()).doesNotContain("s3cret");
  }

  @Test
  void missingAndBadFieldsAreReportedAtTheirLines() {
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          nats:
                            url: http://x
                            stream: "ORD ERS"
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining(
            "idem.yaml:4:7: pipelines[0].source.nats.durable: is required; name the durable"
                + " consumer")
        .satisfies(
            e ->
                assertThat(((ConfigException) e).problems())
                    .extracting(ConfigProblem::path)
                    .containsExactly("pipelines[0].source.nats.durable"));
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          nats:
                            url: http://x
                            stream: "ORD ERS"
                            durable: d
                            batch: 0
                            dead_letter: dlq.*
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining(
            "idem.yaml:5:9: pipelines[0].source.nats.url: 'http://x' is not a NATS URL")
        .hasMessageContaining(
            "idem.yaml:6:9: pipelines[0].source.nats.stream: 'ORD ERS' is not a stream name")
        .hasMessageContaining("pipelines[0].source.nats.batch: batch must be from 1 to 10000")
        .hasMessageContaining("pipelines[0].source.nats.dead_letter:");
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          nats: { stream: S, durable: d, max_deliver: 3, max_attempts: 5 }
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining(
            "pipelines[0].source.nats.max_attempts: max_attempts (5) must not"
                + " exceed max_deliver (3)");
  }

  @Test
  void aPipelineHasOneSourceAndTheNatsSinkNeedsASubject() {
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          webhook: { path: /hooks/o }
                          nats: { stream: S, durable: d }
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining("has webhook and nats; a pipeline has exactly one source");
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          webhook: { path: /hooks/o }
                        deliver:
                          nats: { url: "nats://127.0.0.1:4222" }
                    """))
        .hasMessageContaining("pipelines[0].deliver.nats.subject: is required");
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: orders
                        source:
                          webhook: { path: /hooks/o }
                        deliver:
                          nats: { subject: "out.*" }
                    """))
        .hasMessageContaining(
            "pipelines[0].deliver.nats.subject: 'out.*' is not a" + " subject without wildcards");
  }
}
