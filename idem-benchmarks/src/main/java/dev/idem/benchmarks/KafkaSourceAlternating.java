package dev.idem.benchmarks;

import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Issue 10 §6 for Kafka: {@code source.kafka} consuming with dedup (memory store, and Redis)
 * against a bare {@link KafkaConsumer} on the same client library, broker, topic, poll size ({@code
 * max.poll.records}) and acknowledgement mode (a synchronous commit after each poll), doing no
 * dedup. The contenders run in alternating slots (bare, memory, redis, bare, ...), each slot a new
 * consumer group reading the same pre-filled topic from the start; a slot's figure is records per
 * second until its group's committed offsets reach the end of the topic (both include joining the
 * group, so RECORDS should be large enough for that to vanish). Idem delivers to {@code
 * deliver.file} on a temporary file, the cheapest sink. The first round warms up and is not
 * counted; the figure is the median of the per-round ratios to the bare slot next to them.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KafkaSourceAlternating \
 *     BOOTSTRAP [RECORDS [ROUNDS [MAX_POLL [REDIS_URL]]]]
 * e.g. ... KafkaSourceAlternating 127.0.0.1:9092 200000 6 500 redis://127.0.0.1:6379
 * </pre>
 *
 * <p>Records are small JSON bodies with an {@code X-Order-Id} header, 30% of them repeating an
 * earlier id; Idem's key is {@code header("X-Order-Id")}. REDIS_URL {@code none} leaves Redis out.
 */
public final class KafkaSourceAlternating {
  private KafkaSourceAlternating() {}

  /**
   * Runs the comparison.
   *
   * @param args BOOTSTRAP [RECORDS [ROUNDS [MAX_POLL [REDIS_URL]]]]
   * @throws Exception if the broker fails
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println(
          "usage: KafkaSourceAlternating BOOTSTRAP [RECORDS [ROUNDS [MAX_POLL [REDIS_URL]]]]");
      System.exit(2);
    }
    String bootstrap = args[0];
    int records = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 6;
    int maxPoll = args.length > 3 ? Integer.parseInt(args[3]) : 500;
    String redis = args.length > 4 ? args[4] : "redis://127.0.0.1:6379";
    String topic = "bench-" + UUID.randomUUID().toString().substring(0, 8);
    fill(bootstrap, topic, records);

    List<String> contenders = new ArrayList<>(List.of("bare", "idem-memory"));
    if (!redis.equals("none")) {
      contenders.add("idem-redis");
    }
    Map<String, List<Double>> ratios = new LinkedHashMap<>();
    for (int round = 0; round < rounds; round++) {
      Map<String, Double> rate = new LinkedHashMap<>();
      for (String c : contenders) {
        String group = topic + "-" + c + "-" + round;
        long started = System.nanoTime();
        if (c.equals("bare")) {
          bare(bootstrap, topic, group, maxPoll, records);
        } else {
          idem(bootstrap, topic, group, maxPoll, c.equals("idem-redis") ? redis : null);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        rate.put(c, records / seconds);
        System.out.printf("round %d %-12s %10.0f records/s%n", round, c, records / seconds);
      }
      if (round > 0) {
        for (String c : contenders) {
          if (!c.equals("bare")) {
            ratios.computeIfAbsent(c, k -> new ArrayList<>()).add(rate.get(c) / rate.get("bare"));
          }
        }
      }
    }
    ratios.forEach(
        (c, r) -> {
          List<Double> sorted = r.stream().sorted().toList();
          System.out.printf(
              "%-12s / bare: median %.2f (min %.2f, max %.2f) over %d rounds%n",
              c,
              sorted.isEmpty() ? Double.NaN : sorted.get(sorted.size() / 2),
              sorted.isEmpty() ? Double.NaN : sorted.get(0),
              sorted.isEmpty() ? Double.NaN : sorted.get(sorted.size() - 1),
              sorted.size());
        });
  }

  private static void fill(String bootstrap, String topic, int records) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      admin
          .createTopics(List.of(new NewTopic(topic, 3, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
    Map<String, Object> c = new HashMap<>();
    c.put("bootstrap.servers", bootstrap);
    c.put("acks", "all");
    c.put("linger.ms", 5);
    c.put("key.serializer", StringSerializer.class);
    c.put("value.serializer", StringSerializer.class);
    Random random = new Random(6);
    int unique = (int) (records * 0.7);
    try (KafkaProducer<String, String> p = new KafkaProducer<>(c)) {
      for (int i = 0; i < records; i++) {
        int id = i < unique ? i : random.nextInt(unique);
        ProducerRecord<String, String> r =
            new ProducerRecord<>(topic, null, "{\"order\":\"o-" + id + "\",\"n\":" + i + "}");
        r.headers().add("X-Order-Id", ("o-" + id).getBytes(StandardCharsets.UTF_8));
        p.send(r);
      }
      p.flush();
    }
  }

  /** A bare consumer: poll, commit synchronously, no dedup, until it has read every record. */
  private static void bare(String bootstrap, String topic, String group, int maxPoll, int records) {
    Map<String, Object> c = new HashMap<>();
    c.put("bootstrap.servers", bootstrap);
    c.put("group.id", group);
    c.put("enable.auto.commit", false);
    c.put("auto.offset.reset", "earliest");
    c.put("max.poll.records", maxPoll);
    c.put("key.deserializer", ByteArrayDeserializer.class);
    c.put("value.deserializer", ByteArrayDeserializer.class);
    long read = 0;
    long sink = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
      consumer.subscribe(List.of(topic));
      while (read < records) {
        ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(200));
        for (var r : polled) {
          sink += r.value().length; // touch the value, as a consumer would
          read++;
        }
        if (!polled.isEmpty()) {
          consumer.commitSync();
        }
      }
    }
    if (sink == 42) {
      System.out.print("");
    }
  }

  /** Idem's source through the service, until its group has committed every offset. */
  private static void idem(
      String bootstrap, String topic, String group, int maxPoll, String redisUrl) throws Exception {
    java.nio.file.Path out = java.nio.file.Files.createTempFile("idem-kafka-bench-", ".jsonl");
    try {
      runIdem(bootstrap, topic, group, maxPoll, redisUrl, out);
    } finally {
      java.nio.file.Files.deleteIfExists(out);
    }
  }

  private static void runIdem(
      String bootstrap,
      String topic,
      String group,
      int maxPoll,
      String redisUrl,
      java.nio.file.Path out)
      throws Exception {
    String store =
        redisUrl == null
            ? "{ type: memory }"
            : "{ type: redis, url: \"" + redisUrl + "\", prefix: \"idem-bench:" + group + ":\" }";
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: %s
        pipelines:
          - id: bench
            source:
              kafka: { bootstrap: "%s", topics: [%s], group: %s, max_poll_records: %d,
                       on_bad_record: log_and_skip }
            dedup: { key: header("X-Order-Id"), window: 1h }
            deliver: { file: { path: "%s" } }
        """
            .formatted(store, bootstrap, topic, group, maxPoll, out);
    IdemConfig config = ConfigLoader.parse("bench.yaml", yaml, n -> null);
    try (IdemServer server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()))) {
      try (Admin admin = admin(bootstrap)) {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < 3; p++) {
          latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> ends = new HashMap<>();
        admin.listOffsets(latest).all().get().forEach((tp, info) -> ends.put(tp, info.offset()));
        while (true) {
          Map<TopicPartition, OffsetAndMetadata> committed =
              admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
          boolean done = true;
          for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            OffsetAndMetadata o = committed.get(e.getKey());
            // An empty partition has nothing to commit.
            if (e.getValue() > 0 && (o == null || o.offset() < e.getValue())) {
              done = false;
            }
          }
          if (done) {
            return;
          }
          Thread.sleep(20);
        }
      }
    }
  }

  private static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return Admin.create(p);
  }
}
