package dev.idem.server.source.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.kafka.testing.KafkaBroker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Issue 16 §2 end to end: three {@code idem serve} instances (the packaged jar) in one consumer
 * group keep the dedup keys of their partitions in {@code source.kafka.state} (local RocksDB plus a
 * compacted changelog; no shared store) and deliver to a file each. Records are keyed by order id
 * (one order, one partition), 30% of them repeat an earlier order. Half the records are consumed,
 * one instance is killed with SIGKILL, then the other half is produced: its repeats of orders the
 * killed instance committed are judged by the survivors from the restored changelog. A fourth
 * instance joins afterwards (a cooperative rebalance: the partitions it takes are restored again).
 *
 * <p>At the end every order was delivered, each always with the same Idempotency-Key, repeats never
 * beyond the documented window (a kill between the sink's write and the flushed key commit delivers
 * those events again, with the same key: at most one poll, {@code max_poll_records}), the survivors
 * restored changelog records, and every offset is committed.
 *
 * <p>{@code idem.kstate.kill.orders} sets the unique orders (default 1,000; {@code -Psoak} 20,000).
 *
 * <p>Each instance's stdout and stderr (DEBUG for the local state and the source) stay under {@code
 * target/it-kstate-kill/run-*}; on a failure the group's members, each partition's end and
 * committed offsets and the logs' tails are printed into the failsafe report. It once stalled here
 * after the fourth instance's rebalance (issue 16): a commit refused while a cooperative rebalance
 * was pending dropped its offsets, so the last wait (zero lag) never ended; such offsets are now
 * committed after the rebalance ({@code KafkaStateSourceTest} shows it deterministically).
 */
class KafkaStateKillIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_POLL_RECORDS = 20;
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  /** Kept after the run (under target/), so the instances' logs can be read after a failure. */
  private final Path dir = newDir().toAbsolutePath();

  private static Path newDir() {
    try {
      Files.createDirectories(Path.of("target", "it-kstate-kill"));
      return Files.createTempDirectory(Path.of("target", "it-kstate-kill"), "run-");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void everyOrderIsActedOnOnceAcrossASigkilledInstanceWithPartitionedLocalState() throws Exception {
    int unique = Integer.getInteger("idem.kstate.kill.orders", 1_000);
    int firstHalf = unique * 7 / 10;
    try (KafkaBroker kafka = KafkaBroker.start();
        KafkaProducer<String, String> producer =
            KafkaFixtures.plainProducer(kafka.bootstrapServers())) {
      kafka.createTopic("orders", 6);
      KafkaFixtures.awaitLeaders(kafka.bootstrapServers(), "orders");
      Random random = new Random(16);

      // given three instances in one group, each with its own local state
      List<Instance> instances = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        instances.add(new Instance(i, kafka.bootstrapServers()));
      }
      try {
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(200))
            .ignoreExceptions() // the group exists once its first member joined
            .until(() -> assignedMembers(kafka.bootstrapServers()) == 3);

        step("three instances assigned");
        // when the first part (70% of the orders, 30% repeats among them) is consumed
        List<String[]> first = new ArrayList<>();
        for (int i = 0; i < firstHalf; i++) {
          addOrderWithRepeats(first, i, random);
        }
        produceKeyed(producer, first);
        int repeatsSoFar = first.size() - firstHalf;
        await()
            .atMost(Duration.ofSeconds(180))
            .pollInterval(Duration.ofMillis(50))
            .until(() -> delivered(instances).size() >= firstHalf * 6 / 10);

        // and one instance is killed mid-run, then the rest is produced: new orders, and repeats
        // of orders of every partition, the killed instance's included
        step("first part consumed; killing instance-0");
        instances.get(0).kill();
        List<String[]> second = new ArrayList<>();
        int wantRepeats = (int) Math.round(unique * 0.3 / 0.7) - repeatsSoFar;
        for (int i = firstHalf; i < unique; i++) {
          second.add(order(i, false));
        }
        for (int n = 0; n < wantRepeats; n++) {
          second.add(1 + random.nextInt(second.size()), order(random.nextInt(firstHalf), true));
        }
        produceKeyed(producer, second);

        // and a fourth instance joins once the survivors took the killed one's partitions
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(200))
            .ignoreExceptions() // the group exists once its first member joined
            .until(() -> assignedMembers(kafka.bootstrapServers()) == 2);
        step("survivors took over; starting instance-3");
        instances.add(new Instance(3, kafka.bootstrapServers()));
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(200))
            .ignoreExceptions()
            .until(() -> assignedMembers(kafka.bootstrapServers()) == 3);
        await()
            .atMost(Duration.ofSeconds(240))
            .pollInterval(Duration.ofMillis(500))
            .until(
                () ->
                    KafkaFixtures.uncommitted(kafka.bootstrapServers(), "ingest", "orders") == 0
                        && delivered(instances).stream()
                                .map(l -> l.get("event").get("order").asText())
                                .distinct()
                                .count()
                            == unique);

        step("all delivered and committed");
        // then every order was acted on once past its key; repeats only from the kill window
        List<JsonNode> lines = delivered(instances);
        Map<String, Set<String>> keysOf = new HashMap<>();
        int repeatsDelivered = 0;
        for (JsonNode l : lines) {
          keysOf
              .computeIfAbsent(l.get("event").get("order").asText(), o -> new HashSet<>())
              .add(l.get("idempotency_key").asText());
          if (l.get("event").has("again")) {
            repeatsDelivered++;
          }
        }
        int records = first.size() + second.size();
        assertThat((double) (records - unique) / records)
            .as("share of records that repeat an earlier order")
            .isBetween(0.27, 0.33);
        assertThat(keysOf).hasSize(unique);
        assertThat(keysOf.values()).allSatisfy(keys -> assertThat(keys).hasSize(1));
        assertThat(lines.size() - unique)
            .as("events delivered again (a kill between the sink's write and the changelog flush)")
            .isBetween(0, MAX_POLL_RECORDS);
        assertThat(repeatsDelivered)
            .as("repeated records delivered (only inside the kill window)")
            .isLessThanOrEqualTo(MAX_POLL_RECORDS);
        assertThat(KafkaFixtures.uncommitted(kafka.bootstrapServers(), "ingest", "orders"))
            .isZero();
        double restored = 0;
        for (Instance s : instances.subList(1, 3)) {
          restored += s.metric("idem_kafka_state_restore_records_total");
        }
        assertThat(restored)
            .as("changelog records the survivors restored (the killed one's partitions)")
            .isPositive();
        assertThat(instances.get(3).metric("idem_kafka_state_restore_seconds_count"))
            .as("partitions the newcomer restored when it joined")
            .isPositive();
      } catch (Exception | AssertionError e) {
        // into the failsafe report's -output.txt; the full logs stay in dir
        System.out.println("=== failed; instances' logs in " + dir.toAbsolutePath());
        printGroup(kafka.bootstrapServers());
        System.out.println("delivered lines: " + delivered(instances).size() + " of " + unique);
        for (Instance s : instances) {
          s.printTail();
        }
        throw e;
      } finally {
        for (Instance s : instances) {
          s.stop();
        }
      }
    }
  }

  private static void step(String what) {
    System.out.println(java.time.LocalTime.now() + " step: " + what);
  }

  /** An order, then (30% of the time) a repeat of an earlier order, after its original. */
  private static void addOrderWithRepeats(List<String[]> records, int i, Random random) {
    records.add(order(i, false));
    if (random.nextDouble() < 0.3 / 0.7 && i > 0) {
      records.add(order(random.nextInt(i), true));
    }
  }

  private static String[] order(int i, boolean again) {
    String id = "o-" + i;
    return new String[] {
      again ? "{\"order\":\"" + id + "\",\"again\":true}" : "{\"order\":\"" + id + "\"}", id
    };
  }

  /** Sends records keyed by order id (one order, one partition), with the X-Order-Id header. */
  private static void produceKeyed(KafkaProducer<String, String> producer, List<String[]> records)
      throws Exception {
    List<Future<?>> sent = new ArrayList<>();
    for (String[] r : records) {
      ProducerRecord<String, String> pr = new ProducerRecord<>("orders", r[1], r[0]);
      pr.headers().add("X-Order-Id", r[1].getBytes(StandardCharsets.UTF_8));
      sent.add(producer.send(pr));
    }
    producer.flush();
    for (Future<?> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
  }

  /** The group's members and assignments, and each partition's end and committed offsets. */
  private static void printGroup(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(p)) {
      ConsumerGroupDescription g =
          admin
              .describeConsumerGroups(List.of("ingest"))
              .all()
              .get(30, TimeUnit.SECONDS)
              .get("ingest");
      System.out.println(
          "group ingest: state=" + g.groupState() + " members=" + g.members().size());
      g.members()
          .forEach(
              m ->
                  System.out.println(
                      "  "
                          + m.clientId()
                          + " "
                          + m.host()
                          + " "
                          + m.assignment().topicPartitions()));
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin
              .listConsumerGroupOffsets("ingest")
              .partitionsToOffsetAndMetadata()
              .get(30, TimeUnit.SECONDS);
      for (String topic : List.of("orders", "ingest-orders-idem-changelog")) {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        admin
            .describeTopics(List.of(topic))
            .allTopicNames()
            .get(30, TimeUnit.SECONDS)
            .get(topic)
            .partitions()
            .forEach(
                q -> latest.put(new TopicPartition(topic, q.partition()), OffsetSpec.latest()));
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
        new java.util.TreeMap<>(
                ends.entrySet().stream()
                    .collect(
                        java.util.stream.Collectors.toMap(
                            e -> e.getKey().partition(), e -> e.getValue().offset())))
            .forEach(
                (part, end) -> {
                  OffsetAndMetadata c = committed.get(new TopicPartition(topic, part));
                  System.out.println(
                      "  "
                          + topic
                          + "-"
                          + part
                          + " end="
                          + end
                          + (topic.equals("orders")
                              ? " committed="
                                  + (c == null ? "none" : c.offset())
                                  + " lag="
                                  + (end - (c == null ? 0 : c.offset()))
                              : ""));
                });
      }
    } catch (Exception e) {
      System.out.println("cannot describe the group: " + e);
    }
  }

  /** Members of the group that hold at least one partition. */
  private static int assignedMembers(String bootstrap) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(p)) {
      ConsumerGroupDescription g =
          admin.describeConsumerGroups(List.of("ingest")).all().get().get("ingest");
      return (int)
          g.members().stream().filter(m -> !m.assignment().topicPartitions().isEmpty()).count();
    }
  }

  private static List<JsonNode> delivered(List<Instance> instances) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    for (Instance s : instances) {
      if (!Files.exists(s.out)) {
        continue;
      }
      for (String l : Files.readAllLines(s.out)) {
        if (!l.isBlank() && l.endsWith("}")) { // a line cut by the kill is not an event
          out.add(JSON.readTree(l));
        }
      }
    }
    return out;
  }

  /** One {@code idem serve} child JVM in its own directory. */
  private final class Instance {
    final Path home;
    final Path out;
    final int port;
    final Process process;

    Instance(int n, String bootstrap) throws IOException {
      home = Files.createDirectories(dir.resolve("instance-" + n));
      out = home.resolve("out.jsonl");
      port = KafkaFixtures.freePort();
      // DEBUG for the local state and the source, so a stall can be read from the logs.
      Files.writeString(
          home.resolve("logback.xml"),
          """
          <configuration>
            <appender name="ERR" class="ch.qos.logback.core.ConsoleAppender">
              <target>System.err</target>
              <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
            </appender>
            <logger name="dev.idem.kafka.state" level="DEBUG"/>
            <logger name="dev.idem.server.source.kafka" level="DEBUG"/>
            <logger name="org.apache.kafka.clients.consumer.internals.ConsumerCoordinator" level="INFO"/>
            <logger name="org.apache.kafka" level="WARN"/>
            <logger name="org.eclipse.jetty" level="WARN"/>
            <logger name="org.rocksdb" level="WARN"/>
            <root level="INFO"><appender-ref ref="ERR"/></root>
          </configuration>
          """);
      Files.writeString(
          home.resolve("idem.yaml"),
          """
          server: { host: 127.0.0.1, port: %d }
          pipelines:
            - id: orders
              source:
                kafka:
                  bootstrap: "%s"
                  topics: [orders]
                  group: ingest
                  on_bad_record: log_and_skip
                  max_poll_records: %d
                  properties: { session.timeout.ms: "6000", heartbeat.interval.ms: "1000" }
                  state: { dir: state, replication_factor: 1 }
              dedup: { key: header("X-Order-Id"), window: 1h, lease: 2s }
              deliver: { mode: sync, file: { path: "%s" } }
          """
              .formatted(port, bootstrap, MAX_POLL_RECORDS, out));
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      Path jar = Path.of(System.getProperty("idem.jar", "target/idem.jar"));
      process =
          new ProcessBuilder(
                  java,
                  "-Xmx256m",
                  "-Dlogback.configurationFile=" + home.resolve("logback.xml").toAbsolutePath(),
                  "-jar",
                  jar.toAbsolutePath().toString(),
                  "serve",
                  "--config",
                  "idem.yaml")
              .directory(home.toFile())
              .redirectOutput(home.resolve("stdout.txt").toFile())
              .redirectError(home.resolve("stderr.txt").toFile())
              .start();
    }

    void kill() throws InterruptedException {
      process.destroyForcibly();
      assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }

    void stop() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
    }

    void printTail() {
      System.out.println("=== " + home + " alive=" + process.isAlive());
      for (String f : List.of("stdout.txt", "stderr.txt")) {
        try {
          List<String> all = Files.readAllLines(home.resolve(f));
          System.out.println("--- " + f + " (last 60 of " + all.size() + " lines)");
          all.subList(Math.max(0, all.size() - 60), all.size()).forEach(System.out::println);
        } catch (IOException e) {
          System.out.println(f + ": " + e);
        }
      }
    }

    /** The sum of a Prometheus metric's samples on this instance (once its HTTP port answers). */
    double metric(String name) {
      assertThat(process.isAlive()).as(home + " is running").isTrue();
      return await()
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(250))
          .ignoreExceptions()
          .until(() -> scrape(name), v -> true);
    }

    private double scrape(String name) throws Exception {
      String body =
          HTTP.send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      Matcher m = Pattern.compile("(?m)^" + name + "\\{[^}]*} ([0-9.eE+-]+)$").matcher(body);
      double sum = 0;
      while (m.find()) {
        sum += Double.parseDouble(m.group(1));
      }
      return sum;
    }
  }
}
