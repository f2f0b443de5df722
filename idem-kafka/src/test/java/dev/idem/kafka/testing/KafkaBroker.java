package dev.idem.kafka.testing;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * A real Kafka broker in this JVM for tests: one KRaft node (broker and controller combined) from
 * Kafka's own test kit, listening on a free loopback port, with its log directories in a temporary
 * folder that {@link #close()} deletes. Starts in a few seconds; share one per test class.
 *
 * <pre>{@code
 * try (KafkaBroker kafka = KafkaBroker.start()) {
 *   kafka.createTopic("orders", 3);
 *   try (KafkaProducer<String, String> p = kafka.producer()) { ... }
 * }
 * }</pre>
 *
 * <p>Self-contained on purpose (only Kafka's {@code kafka_2.13} and {@code
 * kafka-test-common-runtime} jars), so another module can depend on this module's test jar or copy
 * the class.
 */
public final class KafkaBroker implements AutoCloseable {
  private final KafkaClusterTestKit cluster;
  private final Admin admin;

  private KafkaBroker(KafkaClusterTestKit cluster) {
    this.cluster = cluster;
    Properties p = new Properties();
    p.put("bootstrap.servers", cluster.bootstrapServers());
    this.admin = Admin.create(p);
  }

  /**
   * Formats and starts a one-node cluster and waits until its broker is ready.
   *
   * @return the running broker
   * @throws Exception if it did not start
   */
  public static KafkaBroker start() throws Exception {
    TestKitNodes nodes =
        new TestKitNodes.Builder()
            .setCombined(true)
            .setNumBrokerNodes(1)
            .setNumControllerNodes(1)
            .build();
    KafkaClusterTestKit cluster =
        new KafkaClusterTestKit.Builder(nodes)
            // One node: internal topics cannot have more replicas than that.
            .setConfigProp("offsets.topic.replication.factor", "1")
            .setConfigProp("offsets.topic.num.partitions", "4")
            .setConfigProp("transaction.state.log.replication.factor", "1")
            .setConfigProp("transaction.state.log.min.isr", "1")
            // Tests start consumers one after another: rebalance as soon as they join.
            .setConfigProp("group.initial.rebalance.delay.ms", "0")
            .build();
    try {
      cluster.format();
      cluster.startup();
      cluster.waitForReadyBrokers();
    } catch (Exception e) {
      cluster.close();
      throw e;
    }
    return new KafkaBroker(cluster);
  }

  /**
   * Returns the broker's address for clients.
   *
   * @return {@code host:port}
   */
  public String bootstrapServers() {
    return cluster.bootstrapServers();
  }

  /**
   * Creates a topic and waits until it exists.
   *
   * @param name the topic
   * @param partitions how many partitions
   * @throws Exception if the broker refused
   */
  public void createTopic(String name, int partitions) throws Exception {
    admin
        .createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
        .all()
        .get(30, TimeUnit.SECONDS);
    // Wait until every partition has a leader: a producer that starts sending while a fresh
    // broker still elects one can see its batches expire.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      org.apache.kafka.clients.admin.TopicDescription description;
      try {
        description =
            admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS).get(name);
      } catch (java.util.concurrent.ExecutionException e) {
        // A topic just created is not yet in every metadata cache (seen under load): ask again.
        if (!(e.getCause()
            instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
          throw e;
        }
        Thread.sleep(50);
        continue;
      }
      if (description != null
          && description.partitions().size() == partitions
          && description.partitions().stream()
              .allMatch(p -> p.leader() != null && !p.isr().isEmpty())) {
        return;
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException(
        "topic " + name + " has a partition without a leader after 30 s");
  }

  /**
   * Returns a topic name no other test uses.
   *
   * @param prefix a readable prefix
   * @return the name
   */
  public static String uniqueTopic(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * Returns a producer of string keys and values that waits for the broker's acknowledgement: an
   * idempotent one with one request in flight per connection. (With the default five, a fresh
   * partition whose leader was not yet ready answered the first batch NOT_LEADER_OR_FOLLOWER and
   * accepted the later ones; the retried first batch was then OUT_OF_ORDER_SEQUENCE_NUMBER on every
   * retry until the records expired, seen in a loaded CI run: the broker's KAFKA-15591.)
   *
   * @return a new producer; close it
   */
  public KafkaProducer<String, String> producer() {
    Map<String, Object> c = new HashMap<>();
    c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    c.put(ProducerConfig.ACKS_CONFIG, "all");
    c.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
    c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    return new KafkaProducer<>(c);
  }

  /**
   * Returns consumer settings for a group: string keys and values, manual offset commits, reading
   * from the earliest offset, and short session timeouts so a rebalance is quick.
   *
   * @param groupId the consumer group
   * @return the settings; change them freely
   */
  public Map<String, Object> consumerConfig(String groupId) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, (int) Duration.ofSeconds(10).toMillis());
    c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
    return c;
  }

  /**
   * Returns a consumer for a group with {@link #consumerConfig(String)}.
   *
   * @param groupId the consumer group
   * @return a new consumer; close it
   */
  public KafkaConsumer<String, String> consumer(String groupId) {
    return new KafkaConsumer<>(consumerConfig(groupId));
  }

  /** Stops the broker and deletes its data. */
  @Override
  public void close() throws Exception {
    try {
      admin.close(Duration.ofSeconds(5));
    } finally {
      cluster.close();
    }
  }
}
