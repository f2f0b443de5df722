package dev.idem.server.source.kafka;

import static dev.idem.server.source.kafka.KafkaFixtures.serve;
import static dev.idem.server.source.kafka.KafkaFixtures.uncommitted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.server.IdemServer;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code source.kafka.state} in one JVM (issue 16 §2): a service keeps the keys of its partitions
 * locally and in the changelog; a second service of the same group, with an empty state directory
 * of its own, restores them before it reads a record, so repeats of orders the first one delivered
 * are duplicates, and only new orders are delivered. The restore is counted in the metrics.
 */
class KafkaStateSourceTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private IdemConfig config(String bootstrap, String topic, String stateDir, Path out) {
    return ConfigLoader.parse(
        "kstate.yaml",
        """
        server: { host: 127.0.0.1, port: 0 }
        pipelines:
          - id: orders
            source:
              kafka:
                bootstrap: "%s"
                topics: [%s]
                group: kstate
                on_bad_record: log_and_skip
                state: { dir: "%s", replication_factor: 1 }
            dedup: { key: header("X-Order-Id"), window: 1h }
            deliver: { file: { path: "%s" } }
        """
            .formatted(bootstrap, topic, dir.resolve(stateDir), out),
        n -> null);
  }

  @Test
  void aNewOwnerRestoresTheKeysBeforeItDecidesAndDeliversOnlyNewOrders() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start();
        KafkaProducer<String, String> producer =
            KafkaFixtures.plainProducer(kafka.bootstrapServers())) {
      String topic = KafkaBroker.uniqueTopic("kstate");
      kafka.createTopic(topic, 3);
      KafkaFixtures.awaitLeaders(kafka.bootstrapServers(), topic);
      Random random = new Random(2);

      // given a first service that delivered 300 orders (and skipped 90 repeats)
      List<String[]> first = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        first.add(order(i, false));
        if (i > 0 && i % 10 < 3) {
          first.add(order(random.nextInt(i), true));
        }
      }
      produceKeyed(producer, topic, first);
      Path out1 = dir.resolve("out-1.jsonl");
      try (IdemServer one = serve(config(kafka.bootstrapServers(), topic, "state-1", out1))) {
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> uncommitted(kafka.bootstrapServers(), "kstate", topic) == 0);
      }
      assertThat(lines(out1)).hasSize(300);

      // when repeats of those and 50 new orders arrive for a second service with an empty dir
      List<String[]> second = new ArrayList<>();
      for (int i = 0; i < 150; i++) {
        second.add(order(random.nextInt(300), true));
      }
      for (int i = 300; i < 350; i++) {
        second.add(order(i, false));
      }
      produceKeyed(producer, topic, second);
      Path out2 = dir.resolve("out-2.jsonl");
      String metrics;
      JsonNode health;
      try (IdemServer two = serve(config(kafka.bootstrapServers(), topic, "state-2", out2))) {
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> uncommitted(kafka.bootstrapServers(), "kstate", topic) == 0);
        metrics = two.runtime().prometheus().scrape();
        health = health(two);
      }

      // then only the new orders are delivered: the repeats were judged by the restored keys
      List<JsonNode> delivered = lines(out2);
      assertThat(delivered).hasSize(50);
      assertThat(delivered)
          .allSatisfy(l -> assertThat(l.get("event").has("again")).isFalse())
          .extracting(l -> l.get("event").get("order").asText())
          .doesNotHaveDuplicates();
      assertThat(metrics)
          .containsPattern("idem_kafka_state_restore_records_total\\{pipeline=\"orders\"} [1-9]")
          .containsPattern(
              "idem_kafka_state_restore_seconds_count\\{pipeline=\"orders\"} 3(\\.0)?\\b");
      // and /health shows the local state: every partition ready, none restoring, no write error
      JsonNode state = null;
      for (JsonNode st : health.get("stores")) {
        if (st.get("store").asText().startsWith("kafka-state:")) {
          state = st;
        }
      }
      assertThat(state).as("the local state in /health: " + health).isNotNull();
      assertThat(state.get("status").asText()).isEqualTo("up");
      JsonNode d = state.get("details");
      assertThat(d.get("ready_partitions").toString()).isEqualTo("[0,1,2]");
      assertThat(d.get("restoring_partitions").toString()).isEqualTo("[]");
      assertThat(d.get("restore_remaining_records").asLong()).isZero();
      assertThat(d.get("restored_partitions").asInt()).isEqualTo(3);
      assertThat(d.get("changelog_send_errors").asLong()).isZero();
      assertThat(metrics)
          .containsPattern("idem_kafka_state_restore_remaining_records\\{pipeline=\"orders\"} 0")
          .contains("idem_kafka_state_changelog_send_errors_total{pipeline=\"orders\"} 0");
    }
  }

  @Test
  void offsetsSettledWhileARebalanceIsPendingAreCommittedOnceItCompletes() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start();
        KafkaProducer<String, String> producer =
            KafkaFixtures.plainProducer(kafka.bootstrapServers())) {
      String topic = KafkaBroker.uniqueTopic("kstate-rebalance");
      String other = KafkaBroker.uniqueTopic("kstate-other");
      kafka.createTopic(topic, 1);
      kafka.createTopic(other, 1);
      KafkaFixtures.awaitLeaders(kafka.bootstrapServers(), topic);
      KafkaFixtures.awaitLeaders(kafka.bootstrapServers(), other);
      Path out = dir.resolve("out.jsonl");
      IdemConfig config =
          ConfigLoader.parse(
              "kstate.yaml",
              """
              server: { host: 127.0.0.1, port: 0 }
              pipelines:
                - id: orders
                  source:
                    kafka:
                      bootstrap: "%s"
                      topics: [%s]
                      group: kstate-rebalance
                      on_bad_record: log_and_skip
                      properties: { heartbeat.interval.ms: "200" }
                      state: { dir: "%s", replication_factor: 1 }
                  dedup: { key: header("X-Order-Id"), window: 1h }
                  deliver: { file: { path: "%s" } }
              """
                  .formatted(kafka.bootstrapServers(), topic, dir.resolve("state"), out),
              n -> null);
      Map<String, Object> member = kafka.consumerConfig("kstate-rebalance");
      member.put(
          ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
          CooperativeStickyAssignor.class.getName());
      member.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 120_000);
      // given a service that owns the topic's partition, and a member of its group (on another
      // topic) that stops polling
      produceKeyed(producer, topic, List.<String[]>of(order(0, false)));
      try (IdemServer one = serve(config);
          KafkaConsumer<String, String> idle = new KafkaConsumer<>(member);
          KafkaConsumer<String, String> joiner = new KafkaConsumer<>(member)) {
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> lines(out).size() == 1);
        idle.subscribe(List.of(other));
        await()
            .atMost(Duration.ofSeconds(90))
            .until(
                () -> {
                  idle.poll(Duration.ofMillis(100));
                  return !idle.assignment().isEmpty();
                });

        // when a third member joins: the rebalance waits for the idle member to rejoin, and the
        // service (cooperative) goes on deciding its partition's records meanwhile
        joiner.subscribe(List.of(other));
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () -> {
                  joiner.poll(Duration.ofMillis(100));
                  return groupState(kafka.bootstrapServers()) == GroupState.PREPARING_REBALANCE;
                });
        for (int i = 1; i <= 20; i++) {
          produceKeyed(producer, topic, List.<String[]>of(order(i, false)));
          int want = i + 1;
          await()
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(50))
              .until(() -> lines(out).size() == want);
        }
        assertThat(groupState(kafka.bootstrapServers()))
            .as("the rebalance was still pending while the records were settled")
            .isEqualTo(GroupState.PREPARING_REBALANCE);

        // then once the idle member rejoins and the rebalance completes, every offset is
        // committed: those refused during the rebalance were tried again
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(100))
            .until(
                () -> {
                  idle.poll(Duration.ofMillis(50));
                  joiner.poll(Duration.ofMillis(50));
                  return uncommitted(kafka.bootstrapServers(), "kstate-rebalance", topic) == 0;
                });
        assertThat(lines(out)).hasSize(21);
      }
    }
  }

  @Test
  void aMissingInputTopicFailsTheStartWithWhatToCreate() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start()) {
      String topic = KafkaBroker.uniqueTopic("kstate-missing");
      assertThatThrownBy(
              () ->
                  serve(config(kafka.bootstrapServers(), topic, "state", dir.resolve("o.jsonl")))
                      .close())
          .hasMessageContaining("source.kafka.state cannot open")
          .hasMessageContaining("the input topic " + topic + " does not exist")
          .hasMessageContaining("--create --topic " + topic);
    }
  }

  private static JsonNode health(IdemServer server) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(server.uri().resolve("/health")).build(),
                HttpResponse.BodyHandlers.ofString());
    return JSON.readTree(r.body());
  }

  private static GroupState groupState(String bootstrap) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(p)) {
      return admin
          .describeConsumerGroups(List.of("kstate-rebalance"))
          .all()
          .get(30, TimeUnit.SECONDS)
          .get("kstate-rebalance")
          .groupState();
    }
  }

  private static String[] order(int i, boolean again) {
    String id = "o-" + i;
    return new String[] {
      again ? "{\"order\":\"" + id + "\",\"again\":true}" : "{\"order\":\"" + id + "\"}", id
    };
  }

  /** Records keyed by order id (one order, one partition), with the X-Order-Id header. */
  static void produceKeyed(
      KafkaProducer<String, String> producer, String topic, List<String[]> records)
      throws Exception {
    List<Future<?>> sent = new ArrayList<>();
    for (String[] r : records) {
      ProducerRecord<String, String> pr = new ProducerRecord<>(topic, r[1], r[0]);
      pr.headers().add("X-Order-Id", r[1].getBytes(StandardCharsets.UTF_8));
      sent.add(producer.send(pr));
    }
    producer.flush();
    for (Future<?> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
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
}
