package dev.idem.server.source.kafka;

import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.IdemConfig;
import dev.idem.tck.ExternalService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/** What the Kafka source tests share: a service from a config, offsets, records, a redis-server. */
final class KafkaFixtures {
  private KafkaFixtures() {}

  /** Starts the service of a config with the real sinks. */
  static IdemServer serve(IdemConfig config) {
    return IdemServer.start(
        config.server(), ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
  }

  /** Sends records (value, X-Order-Id header or null) and waits for the broker's acks. */
  static void produce(KafkaProducer<String, String> producer, String topic, List<String[]> records)
      throws Exception {
    List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
    for (String[] r : records) {
      ProducerRecord<String, String> pr = new ProducerRecord<>(topic, null, r[0]);
      if (r[1] != null) {
        pr.headers().add("X-Order-Id", r[1].getBytes(StandardCharsets.UTF_8));
      }
      sent.add(producer.send(pr));
    }
    producer.flush();
    for (java.util.concurrent.Future<?> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
  }

  /**
   * A producer that is not idempotent: right after a fresh broker's start an idempotent producer
   * can stick on OUT_OF_ORDER_SEQUENCE_NUMBER after a leader change; the tests' own writes need no
   * idempotence (a repeated record is one more duplicate for the pipeline).
   */
  static KafkaProducer<String, String> plainProducer(String bootstrap) {
    Map<String, Object> c = new HashMap<>();
    c.put("bootstrap.servers", bootstrap);
    c.put("acks", "all");
    c.put("enable.idempotence", false);
    c.put("key.serializer", org.apache.kafka.common.serialization.StringSerializer.class);
    c.put("value.serializer", org.apache.kafka.common.serialization.StringSerializer.class);
    return new KafkaProducer<>(c);
  }

  /** Waits until every partition of a new topic has a leader. */
  static void awaitLeaders(String bootstrap, String topic) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (System.nanoTime() < until) {
        var d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        if (d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
          return;
        }
        Thread.sleep(100);
      }
      throw new AssertionError(topic + " has no leader for every partition after 30 s");
    }
  }

  /** The group's committed offsets minus the topic's end offsets, per partition (0 = settled). */
  static long uncommitted(String bootstrap, String group, String topic) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      admin
          .describeTopics(List.of(topic))
          .allTopicNames()
          .get()
          .get(topic)
          .partitions()
          .forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
          admin.listOffsets(latest).all().get();
      long behind = 0;
      for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : ends.entrySet()) {
        OffsetAndMetadata c = committed.get(e.getKey());
        behind += e.getValue().offset() - (c == null ? 0 : c.offset());
      }
      return behind;
    }
  }

  /** The sum of the group's committed offsets on a topic. */
  static long committed(String bootstrap, String group) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      return admin
          .listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata()
          .get()
          .values()
          .stream()
          .mapToLong(OffsetAndMetadata::offset)
          .sum();
    }
  }

  private static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return Admin.create(p);
  }

  /** Reads every record of a topic from the start until {@code count} arrived (or 30 s). */
  static List<ConsumerRecord<String, String>> readAll(
      KafkaConsumer<String, String> consumer, String topic, int count) {
    consumer.subscribe(List.of(topic));
    List<ConsumerRecord<String, String>> out = new ArrayList<>();
    long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (out.size() < count && System.nanoTime() < until) {
      consumer.poll(Duration.ofMillis(200)).forEach(out::add);
    }
    return out;
  }

  static String header(ConsumerRecord<?, ?> r, String name) {
    var h = r.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    }
  }

  /** Starts a throwaway redis-server on a loopback port; skips (fails under CI) without one. */
  static Process redisServer(int port, Path dir) throws IOException {
    try {
      Process p =
          new ProcessBuilder(
                  List.of(
                      "redis-server",
                      "--port",
                      "" + port,
                      "--bind",
                      "127.0.0.1",
                      "--save",
                      "",
                      "--appendonly",
                      "no",
                      "--dir",
                      dir.toString()))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
              .start();
      long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (System.nanoTime() < until) {
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
          return p;
        } catch (IOException notYet) {
          try {
            Thread.sleep(50);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
          }
        }
      }
      p.destroyForcibly();
      throw new IOException("redis-server did not listen on " + port + " within 10 s");
    } catch (IOException e) {
      if (e.getMessage() != null && e.getMessage().contains("did not listen")) {
        throw e;
      }
      String message =
          "redis-server is not installed: install it, e.g. apt-get install redis-server";
      if (ExternalService.isCi()) {
        Assertions.fail("CI=true and " + message);
      }
      Assumptions.abort("skipped: " + message);
      throw e;
    }
  }

  static void stop(Process p) throws InterruptedException {
    if (p != null && p.isAlive()) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
