package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** source.rabbitmq and deliver.rabbitmq: defaults, the default key, located problems. */
class RabbitMqConfigTest {

  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, name -> null);
  }

  @Test
  void defaultsAndTheMessageIdAsDefaultKey() {
    IdemConfig c =
        parse(
            """
            store: { type: memory }
            pipelines:
              - id: q
                source: { rabbitmq: { uri: "amqp://guest:guest@127.0.0.1:5672/", queue: orders } }
                dedup: { window: 1h }
                deliver: { rabbitmq: { uri: "amqp://127.0.0.1", exchange: out, routing_key: k } }
            """);

    PipelineSettings p = c.pipelines().get(0);
    RabbitMqSourceSettings s = (RabbitMqSourceSettings) p.source();
    assertThat(s.prefetch()).isEqualTo(50);
    assertThat(s.consumers()).isEqualTo(4);
    assertThat(s.maxAttempts()).isEqualTo(5);
    assertThat(s.requeueDelay()).isEqualTo(Duration.ofSeconds(1));
    assertThat(s.maxRequeueDelay()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.defaultKey()).isEqualTo(KeySpec.single("header(\"amqp-message-id\")"));
    assertThat(RabbitMqSourceSettings.virtualHost(s.uri())).isEqualTo("/");
    assertThat(p.deliver().sink())
        .isEqualTo(
            new SinkSettings.RabbitMq(
                java.net.URI.create("amqp://127.0.0.1"), "out", "k", Duration.ofSeconds(10)));
    String printed = ConfigPrinter.toYaml(c);
    assertThat(printed)
        .contains("rabbitmq")
        .contains("queue: orders")
        .doesNotContain("guest:guest");
  }

  @Test
  void prefetchOneMeansOneConsumer() {
    IdemConfig c =
        parse(
            """
            store: { type: memory }
            pipelines:
              - id: q
                source: { rabbitmq: { uri: "amqp://h/vh%2Fa", queue: orders, prefetch: 1 } }
                deliver: { stdout: {} }
            """);

    RabbitMqSourceSettings s = (RabbitMqSourceSettings) c.pipelines().get(0).source();
    assertThat(s.consumers()).isEqualTo(1);
    assertThat(RabbitMqSourceSettings.virtualHost(s.uri())).isEqualTo("vh/a");
  }

  @Test
  void problemsNameTheField() {
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: q
                        source: { rabbitmq: { uri: "http://h", prefetch: 0 } }
                        deliver: { rabbitmq: { uri: "amqp://h" } }
                    """))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("pipelines[0].source.rabbitmq.uri: 'http://h' is not an AMQP URI")
        .hasMessageContaining("pipelines[0].source.rabbitmq.queue: is required")
        .hasMessageContaining("pipelines[0].deliver.rabbitmq.routing_key")
        .hasMessageContaining("routing_key is required with the default exchange");
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: q
                        source: { rabbitmq: { uri: "amqp://h", queue: a, prefetch: 0 } }
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining("pipelines[0].source.rabbitmq.prefetch: prefetch must be from 1");
    assertThatThrownBy(
            () ->
                parse(
                    """
                    pipelines:
                      - id: q
                        source:
                          webhook: { path: /in }
                          rabbitmq: { uri: "amqp://h", queue: a }
                        deliver: { stdout: {} }
                    """))
        .hasMessageContaining("has webhook and rabbitmq; a pipeline has exactly one source");
  }
}
