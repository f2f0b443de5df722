package dev.idem.server.source.kafka;

import static dev.idem.server.source.kafka.KafkaFixtures.header;
import static dev.idem.server.source.kafka.KafkaFixtures.produce;
import static dev.idem.server.source.kafka.KafkaFixtures.serve;
import static dev.idem.server.source.kafka.KafkaFixtures.uncommitted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.server.IdemServer;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 §2 and §5 for {@code source.kafka} against a real KRaft broker in this JVM: every record
 * acted on once, duplicates never delivered, offsets fully committed; poison records dead lettered
 * while the rest continue; a store outage pauses consumption and commits nothing; the Kafka sink
 * publishes with {@code Idempotency-Key}.
 */
class KafkaSourceTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static KafkaBroker kafka;
  private static KafkaProducer<String, String> producer;

  @TempDir Path dir;

  @BeforeAll
  static void startBroker() throws Exception {
    kafka = KafkaBroker.start();
    producer = kafka.producer();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    if (producer != null) {
      producer.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  private IdemConfig config(String source, String dedup, String deliver) {
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory }
        pipelines:
          - id: orders
            source: { kafka: { %s } }
            dedup: { %s }
            deliver: { %s }
        """
            .formatted(source, dedup, deliver);
    return ConfigLoader.parse("kafka.yaml", yaml, n -> null);
  }

  private static List<JsonNode> lines(Path file) throws IOException {
    if (!Files.exists(file)) {
      return List.of();
    }
    List<JsonNode> out = new ArrayList<>();
    for (String l : Files.readAllLines(file)) {
      out.add(JSON.readTree(l));
    }
    return out;
  }

  @Test
  void tenThousandRecordsWithThirtyPercentDuplicatesAreDeliveredOnceAndAllCommitted()
      throws Exception {
    // Given 10,000 records on 4 partitions, 3,000 of them repeating an earlier X-Order-Id
    String topic = KafkaBroker.uniqueTopic("orders");
    kafka.createTopic(topic, 4);
    Random random = new Random(10);
    List<String[]> records = new ArrayList<>();
    for (int i = 0; i < 7_000; i++) {
      records.add(new String[] {"{\"order\":\"o-" + i + "\",\"copy\":0}", "o-" + i});
    }
    for (int i = 0; i < 3_000; i++) {
      int of = random.nextInt(7_000);
      records.add(new String[] {"{\"order\":\"o-" + of + "\",\"copy\":1}", "o-" + of});
    }
    Collections.shuffle(records.subList(1_000, records.size()), random);
    produce(producer, topic, records);
    Path out = dir.resolve("out.jsonl");

    // When the service consumes them
    IdemConfig config =
        config(
            "bootstrap: \"%s\", topics: [%s], group: g1, on_bad_record: log_and_skip"
                .formatted(kafka.bootstrapServers(), topic),
            "key: header(\"X-Order-Id\"), window: 1h",
            "file: { path: \"%s\" }".formatted(out));
    try (IdemServer server = serve(config)) {
      await()
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(250))
          .until(() -> uncommitted(kafka.bootstrapServers(), "g1", topic) == 0);
    }

    // Then each order is delivered exactly once, and the group's offsets are at the end
    List<JsonNode> delivered = lines(out);
    Set<String> orders = new HashSet<>();
    Set<String> keys = new HashSet<>();
    for (JsonNode l : delivered) {
      orders.add(l.get("event").get("order").asText());
      keys.add(l.get("idempotency_key").asText());
    }
    assertThat(delivered).hasSize(7_000);
    assertThat(orders).hasSize(7_000);
    assertThat(keys).hasSize(7_000);
    assertThat(uncommitted(kafka.bootstrapServers(), "g1", topic)).isZero();
  }

  @Test
  void poisonRecordsGoToTheDeadLetterTopicWithTheReasonAndTheRestContinue() throws Exception {
    // Given a good record, one that is not JSON, one without the key header, and a good one
    String topic = KafkaBroker.uniqueTopic("orders");
    String dead = topic + ".dead";
    kafka.createTopic(topic, 1);
    kafka.createTopic(dead, 1);
    produce(
        producer,
        topic,
        List.of(
            new String[] {"{\"order\":\"a\"}", "a"},
            new String[] {"not json", "b"},
            new String[] {"{\"order\":\"c\"}", null},
            new String[] {"{\"order\":\"d\"}", "d"}));
    Path out = dir.resolve("out.jsonl");

    // When the service consumes them
    IdemConfig config =
        config(
            "bootstrap: \"%s\", topics: [%s], group: g2, dead_letter_topic: %s"
                .formatted(kafka.bootstrapServers(), topic, dead),
            "key: header(\"X-Order-Id\")",
            "file: { path: \"%s\" }".formatted(out));
    List<ConsumerRecord<String, String>> dlq;
    try (IdemServer server = serve(config);
        KafkaConsumer<String, String> reader = kafka.consumer("dlq-reader-" + topic)) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> uncommitted(kafka.bootstrapServers(), "g2", topic) == 0);
      dlq = KafkaFixtures.readAll(reader, dead, 2);
    }

    // Then the good ones are delivered, the bad ones are dead letters that say why
    assertThat(lines(out))
        .extracting(l -> l.get("event").get("order").asText())
        .containsExactly("a", "d");
    assertThat(dlq).hasSize(2);
    assertThat(dlq.get(0).value()).isEqualTo("not json");
    assertThat(header(dlq.get(0), "idem-reason")).startsWith("malformed_json");
    assertThat(header(dlq.get(0), "idem-original-topic")).isEqualTo(topic);
    assertThat(header(dlq.get(0), "idem-original-partition")).isEqualTo("0");
    assertThat(header(dlq.get(0), "idem-original-offset")).isEqualTo("1");
    assertThat(header(dlq.get(0), "X-Order-Id")).isEqualTo("b");
    assertThat(header(dlq.get(1), "idem-reason")).startsWith("missing_key");
    assertThat(header(dlq.get(1), "idem-original-offset")).isEqualTo("2");
  }

  @Test
  void aStoreOutagePausesConsumptionCommitsNothingAndItResumesWhenTheStoreReturns()
      throws Exception {
    // Given a pipeline on a redis-server of its own that has settled 100 records
    int port = KafkaFixtures.freePort();
    Process redis = KafkaFixtures.redisServer(port, dir);
    String topic = KafkaBroker.uniqueTopic("orders");
    kafka.createTopic(topic, 2);
    Path out = dir.resolve("out.jsonl");
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: redis, url: "redis://127.0.0.1:%d", timeout: 1s, reconnect_delay: 100ms }
        pipelines:
          - id: orders
            source:
              kafka: { bootstrap: "%s", topics: [%s], group: g3, on_bad_record: log_and_skip,
                       backoff: 100ms, max_backoff: 500ms }
            # A reserve that timed out on the client may have landed: its key is in flight until
            # the lease runs out, so a short lease keeps the test short.
            dedup: { key: header("X-Order-Id"), window: 1h, lease: 2s }
            deliver: { file: { path: "%s" } }
        """
            .formatted(port, kafka.bootstrapServers(), topic, out);
    IdemConfig config = ConfigLoader.parse("outage.yaml", yaml, n -> null);
    try (IdemServer server = serve(config)) {
      produce(producer, topic, batch(0, 100));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> uncommitted(kafka.bootstrapServers(), "g3", topic) == 0);
      assertThat(lines(out)).hasSize(100);
      long committedBefore = KafkaFixtures.committed(kafka.bootstrapServers(), "g3");

      // When the store goes away and 50 more records arrive
      KafkaFixtures.stop(redis);
      produce(producer, topic, batch(100, 150));

      // Then nothing more is delivered or committed while it is away (the source retries)
      await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> true);
      assertThat(lines(out)).hasSize(100);
      assertThat(KafkaFixtures.committed(kafka.bootstrapServers(), "g3"))
          .isEqualTo(committedBefore);

      // And when it returns, consumption resumes and settles everything
      redis = KafkaFixtures.redisServer(port, dir);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> uncommitted(kafka.bootstrapServers(), "g3", topic) == 0);
      assertThat(lines(out))
          .extracting(l -> l.get("event").get("order").asText())
          .doesNotHaveDuplicates()
          .hasSize(150);
    } finally {
      KafkaFixtures.stop(redis);
    }
  }

  private static List<String[]> batch(int from, int to) {
    List<String[]> r = new ArrayList<>();
    for (int i = from; i < to; i++) {
      r.add(new String[] {"{\"order\":\"o-" + i + "\"}", "o-" + i});
    }
    return r;
  }

  @Test
  void theKafkaSinkPublishesEachEventOnceWithItsIdempotencyKeyAndKeyField() throws Exception {
    // Given a topic relayed to another through a pipeline with the default key (the body)
    String in = KafkaBroker.uniqueTopic("in");
    String out = KafkaBroker.uniqueTopic("out");
    kafka.createTopic(in, 1);
    kafka.createTopic(out, 1);
    produce(
        producer,
        in,
        List.of(
            new String[] {"{\"order\":\"a\",\"n\":1}", null},
            new String[] {"{\"n\":1,  \"order\":\"a\"}", null},
            new String[] {"{\"order\":\"b\",\"n\":2}", null}));

    // When the service relays them
    IdemConfig config =
        config(
            "bootstrap: \"%s\", topics: [%s], group: g4, on_bad_record: log_and_skip"
                .formatted(kafka.bootstrapServers(), in),
            "window: 1h",
            "kafka: { bootstrap: \"%s\", topic: %s, key: order }"
                .formatted(kafka.bootstrapServers(), out));
    List<ConsumerRecord<String, String>> relayed;
    try (IdemServer server = serve(config);
        KafkaConsumer<String, String> reader = kafka.consumer("reader-" + out)) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> uncommitted(kafka.bootstrapServers(), "g4", in) == 0);
      relayed = KafkaFixtures.readAll(reader, out, 2);
    }

    // Then the same body in another key order is a duplicate; each event carries its key
    assertThat(relayed).extracting(ConsumerRecord::key).containsExactly("a", "b");
    assertThat(relayed)
        .allSatisfy(r -> assertThat(header(r, "Idempotency-Key")).matches("orders:[0-9a-f]{64}"));
    assertThat(header(relayed.get(0), "Idempotency-Key"))
        .isNotEqualTo(header(relayed.get(1), "Idempotency-Key"));
  }
}
