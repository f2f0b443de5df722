package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code source.kafka} and {@code deliver.kafka}: defaults, problems at the right field, printing.
 */
class KafkaConfigTest {

  private static IdemConfig parse(String source, String deliver) {
    return ConfigLoader.parse(
        "idem.yaml",
        """
        store: { type: memory }
        pipelines:
          - id: orders
            source: { kafka: { %s } }
            deliver: { %s }
        """
            .formatted(source, deliver),
        n -> null);
  }

  private static List<String> problems(String source, String deliver) {
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> parse(source, deliver));
    assertThat(e).as("a ConfigException").isNotNull();
    return e.problems().stream().map(p -> p.path() + ": " + p.message()).toList();
  }

  @Test
  void aKafkaSourceGetsItsDefaultsAndTheDefaultKey() {
    IdemConfig c =
        parse(
            "bootstrap: \"k:9092\", topics: [orders], group: ingest, dead_letter_topic: dlq",
            "stdout: {}");

    KafkaSourceSettings k = (KafkaSourceSettings) c.pipelines().get(0).source();
    assertThat(k.maxPollRecords()).isEqualTo(500);
    assertThat(k.onBadRecord()).isEqualTo(KafkaSourceSettings.BadRecord.DEAD_LETTER);
    assertThat(k.maxAttempts()).isEqualTo(5);
    assertThat(k.backoff()).isEqualTo(Duration.ofMillis(200));
    assertThat(k.defaultKey()).isNull();
    assertThat(c.pipelines().get(0).webhook()).isNull();
  }

  @Test
  void withoutADeadLetterTopicTheProblemSaysWhatToDo() {
    assertThat(problems("bootstrap: \"k:9092\", topics: [orders], group: ingest", "stdout: {}"))
        .singleElement()
        .satisfies(
            p ->
                assertThat(p)
                    .startsWith("pipelines[0].source.kafka.dead_letter_topic")
                    .contains("on_bad_record: log_and_skip"));
  }

  @Test
  void missingFieldsAndReservedPropertiesAreNamed() {
    assertThat(problems("topics: []", "stdout: {}"))
        .anySatisfy(p -> assertThat(p).startsWith("pipelines[0].source.kafka.bootstrap"))
        .anySatisfy(p -> assertThat(p).startsWith("pipelines[0].source.kafka.topics"))
        .anySatisfy(p -> assertThat(p).startsWith("pipelines[0].source.kafka.group"));
    assertThat(
            problems(
                "bootstrap: \"k:9092\", topics: [o], group: g, on_bad_record: log_and_skip,"
                    + " properties: { enable.auto.commit: \"true\" }",
                "stdout: {}"))
        .singleElement()
        .satisfies(p -> assertThat(p).contains("enable.auto.commit is set by the source itself"));
  }

  @Test
  void aKafkaSinkIsParsedAndPrintedWithSecretsMasked() {
    IdemConfig c =
        parse(
            "bootstrap: \"k:9092\", topics: [in], group: g, on_bad_record: log_and_skip",
            "kafka: { bootstrap: \"k:9092\", topic: out, key: order.id,"
                + " properties: { sasl.jaas.config: \"secret-jaas\" } }");

    SinkSettings.Kafka k = (SinkSettings.Kafka) c.pipelines().get(0).deliver().sink();
    assertThat(k.key()).isEqualTo("order.id");
    assertThat(k.timeout()).isEqualTo(Duration.ofSeconds(30));
    String printed = ConfigPrinter.toYaml(c);
    assertThat(printed).contains("order.id").doesNotContain("secret-jaas");
    assertThat(k.toString()).doesNotContain("secret-jaas");
  }

  @Test
  void aSinkWithoutATopicOrWithABadKeyIsAProblem() {
    String src = "bootstrap: \"k:9092\", topics: [in], group: g, on_bad_record: log_and_skip";
    assertThat(problems(src, "kafka: { bootstrap: \"k:9092\" }"))
        .singleElement()
        .satisfies(p -> assertThat(p).startsWith("pipelines[0].deliver.kafka.topic"));
    assertThat(problems(src, "kafka: { bootstrap: \"k:9092\", topic: out, key: \"a..b\" }"))
        .singleElement()
        .satisfies(p -> assertThat(p).startsWith("pipelines[0].deliver.kafka.key"));
  }
}
