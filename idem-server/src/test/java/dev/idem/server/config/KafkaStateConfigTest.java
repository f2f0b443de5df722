package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code source.kafka.state}: defaults, printing, and the refusals that say what to do instead
 * (issue 16 §2).
 */
class KafkaStateConfigTest {
  private static final String SOURCE =
      "bootstrap: \"k:9092\", topics: [orders], group: ingest, on_bad_record: log_and_skip";

  private static IdemConfig parse(String pipelineTail) {
    return ConfigLoader.parse(
        "idem.yaml",
        """
        pipelines:
          - id: orders
        %s
        """
            .formatted(pipelineTail.indent(4)),
        n -> null);
  }

  private static List<String> problems(String pipelineTail) {
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> parse(pipelineTail));
    assertThat(e).as("a ConfigException").isNotNull();
    return e.problems().stream().map(p -> p.path() + ": " + p.message()).toList();
  }

  private static String pipeline(String state, String rest) {
    return """
        source: { kafka: { %s, state: { %s } } }
        %s
        """
        .formatted(SOURCE, state, rest);
  }

  @Test
  void stateGetsItsDefaultChangelogAndIsPrinted() {
    IdemConfig c =
        parse(
            pipeline(
                "dir: ./kstate",
                "dedup: { key: header(\"X-Order-Id\") }\ndeliver: { stdout: {} }"));

    KafkaSourceSettings k = (KafkaSourceSettings) c.pipelines().get(0).source();
    assertThat(k.state()).isNotNull();
    assertThat(k.state().dir()).isEqualTo(Path.of("./kstate"));
    assertThat(k.state().replicationFactor()).isEqualTo(3);
    assertThat(k.changelogTopic()).isEqualTo("ingest-orders-idem-changelog");
    assertThat(ConfigPrinter.toYaml(c))
        .contains("state:")
        .contains("changelog_topic: ingest-orders-idem-changelog");
  }

  @Test
  void aGivenChangelogAndReplicationFactorAreKept() {
    IdemConfig c =
        parse(
            pipeline(
                "dir: s, changelog_topic: orders-keys, replication_factor: 1",
                "dedup: { key: header(\"X-Order-Id\") }\ndeliver: { stdout: {} }"));

    KafkaSourceSettings k = (KafkaSourceSettings) c.pipelines().get(0).source();
    assertThat(k.changelogTopic()).isEqualTo("orders-keys");
    assertThat(k.state().replicationFactor()).isEqualTo(1);
  }

  @Test
  void withoutADedupStepTheStateHasNothingToKeep() {
    assertThat(problems(pipeline("dir: s", "deliver: { stdout: {} }")))
        .singleElement()
        .satisfies(
            p -> assertThat(p).startsWith("pipelines[0].source.kafka.state").contains("add dedup"));
  }

  @Test
  void asyncDeliveryIsRefusedWithWhatToDoInstead() {
    assertThat(
            problems(
                pipeline(
                    "dir: s",
                    "dedup: { key: header(\"X-Order-Id\") }\n"
                        + "deliver: { mode: async, stdout: {} }")))
        .singleElement()
        .satisfies(
            p ->
                assertThat(p)
                    .startsWith("pipelines[0].deliver.mode")
                    .contains("use mode: sync")
                    .contains("shared store"));
  }

  @Test
  void orderingIsRefusedWithWhatToDoInstead() {
    assertThat(
            problems(
                pipeline(
                    "dir: s",
                    "dedup: { key: header(\"X-Order-Id\") }\n"
                        + "ordering: { key: customer }\n"
                        + "deliver: { stdout: {} }")))
        .singleElement()
        .satisfies(
            p ->
                assertThat(p)
                    .startsWith("pipelines[0].ordering")
                    .contains("keyed by the ordering key"));
  }

  @Test
  void aDedupStoreOrMaxKeysNextToStateIsRefused() {
    assertThat(
            problems(
                pipeline(
                    "dir: s",
                    "dedup: { key: header(\"X-Order-Id\"), store: { type: memory } }\n"
                        + "deliver: { stdout: {} }")))
        .singleElement()
        .satisfies(p -> assertThat(p).startsWith("pipelines[0].dedup.store"));
    assertThat(
            problems(
                pipeline(
                    "dir: s",
                    "dedup: { key: header(\"X-Order-Id\"), max_keys: 10 }\n"
                        + "deliver: { stdout: {} }")))
        .singleElement()
        .satisfies(p -> assertThat(p).startsWith("pipelines[0].dedup.max_keys"));
  }

  @Test
  void badStateFieldsAreNamed() {
    String rest = "dedup: { key: header(\"X-Order-Id\") }\ndeliver: { stdout: {} }";
    assertThat(problems(pipeline("changelog_topic: x", rest)))
        .singleElement()
        .satisfies(p -> assertThat(p).startsWith("pipelines[0].source.kafka.state.dir"));
    assertThat(problems(pipeline("dir: s, replication_factor: 0", rest)))
        .singleElement()
        .satisfies(
            p -> assertThat(p).startsWith("pipelines[0].source.kafka.state.replication_factor"));
    assertThat(problems(pipeline("dir: s, changelog: x", rest)))
        .singleElement()
        .satisfies(p -> assertThat(p).contains("changelog"));
  }

  @Test
  void stateKeepsOneTopic() {
    assertThat(
            problems(
                """
                source:
                  kafka:
                    bootstrap: "k:9092"
                    topics: [a, b]
                    group: g
                    on_bad_record: log_and_skip
                    state: { dir: s }
                dedup: { key: header("X-Order-Id") }
                deliver: { stdout: {} }
                """))
        .singleElement()
        .satisfies(
            p ->
                assertThat(p)
                    .startsWith("pipelines[0].source.kafka.state")
                    .contains("its own pipeline"));
  }
}
