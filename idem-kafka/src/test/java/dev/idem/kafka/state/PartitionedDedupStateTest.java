package dev.idem.kafka.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Decision;
import dev.idem.DedupConfig;
import dev.idem.Deduplicator;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.kafka.RecordKeys;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.key.KeyEncoding;
import dev.idem.spi.KeyState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link PartitionedDedupState} against a real broker, partitions assigned by hand. */
class PartitionedDedupStateTest {
  private static final Scope SCOPE = Scope.of("kstate-unit");
  private static KafkaBroker kafka;

  @TempDir Path dir;

  @BeforeAll
  static void broker() throws Exception {
    kafka = KafkaBroker.start();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    kafka.close();
  }

  private PartitionedDedupState open(String topic, String name) {
    return PartitionedDedupState.open(
        PartitionedStateConfig.builder(
                topic, dir.resolve(name), Map.of("bootstrap.servers", kafka.bootstrapServers()))
            .replicationFactor(1)
            .build());
  }

  /** Assigns the partitions to a consumer and restores them, as a rebalance would. */
  private static KafkaConsumer<String, String> assignAndRestore(
      PartitionedDedupState state, List<TopicPartition> partitions) {
    KafkaConsumer<String, String> c = kafka.consumer(KafkaBroker.uniqueTopic("g"));
    c.assign(partitions);
    state.rebalanceListener(c).onPartitionsAssigned(partitions);
    assertThat(c.paused()).containsAll(partitions);
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              state.restoreSome(c, Duration.ofMillis(100));
              return !state.isRestoring();
            });
    assertThat(c.paused()).isEmpty();
    return c;
  }

  @Test
  void aNewOwnerRestoresCommittedKeysAndDropsInFlightReleasedAndExpiredOnes() throws Exception {
    String topic = KafkaBroker.uniqueTopic("unit");
    kafka.createTopic(topic, 2);
    List<TopicPartition> both = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));

    try (PartitionedDedupState first = open(topic, "first")) {
      KafkaConsumer<String, String> c = assignAndRestore(first, both);
      Deduplicator p0 = Deduplicator.builder(first.store(0), SCOPE).build();
      Deduplicator shortTtl =
          Deduplicator.builder(first.store(0), SCOPE)
              .config(DedupConfig.custom().ttl(Duration.ofMillis(1)).build())
              .build();
      Deduplicator p1 = Deduplicator.builder(first.store(1), SCOPE).build();
      commit(p0, "committed");
      assertThat(p0.reserve(KeyEncoding.ofString("in-flight")))
          .isInstanceOf(Decision.Acquired.class);
      ((Decision.Acquired) p0.reserve(KeyEncoding.ofString("released"))).reservation().release();
      commit(shortTtl, "expired");
      commit(p1, "other-partition");
      first.flush();
      c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    }
    Thread.sleep(5); // "expired" is past its 1 ms window

    try (PartitionedDedupState second = open(topic, "second")) {
      KafkaConsumer<String, String> c = assignAndRestore(second, both);
      Deduplicator p0 = Deduplicator.builder(second.store(0), SCOPE).build();
      Deduplicator p1 = Deduplicator.builder(second.store(1), SCOPE).build();
      assertThat(p0.inspect(KeyEncoding.ofString("committed")))
          .isInstanceOf(KeyState.Committed.class);
      assertThat(p0.reserve(KeyEncoding.ofString("committed")))
          .isInstanceOf(Decision.Duplicate.class);
      assertThat(p0.inspect(KeyEncoding.ofString("in-flight"))).isEqualTo(KeyState.ABSENT);
      assertThat(p0.inspect(KeyEncoding.ofString("released"))).isEqualTo(KeyState.ABSENT);
      assertThat(p0.inspect(KeyEncoding.ofString("expired"))).isEqualTo(KeyState.ABSENT);
      assertThat(p0.inspect(KeyEncoding.ofString("other-partition"))).isEqualTo(KeyState.ABSENT);
      assertThat(p1.inspect(KeyEncoding.ofString("other-partition")))
          .isInstanceOf(KeyState.Committed.class);
      PartitionedDedupState.RestoreStats s0 =
          second.restores().stream().filter(s -> s.partition() == 0).findFirst().orElseThrow();
      assertThat(s0.entries()).isEqualTo(1);
      assertThat(s0.dropped()).isEqualTo(2); // in flight and expired, tombstoned now

      // A revoked partition's state is dropped here.
      second.rebalanceListener(c).onPartitionsRevoked(List.of(both.get(0)));
      assertThat(second.ownedPartitions()).containsExactly(1);
      assertThatThrownBy(() -> second.store(0))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("not owned");
      assertThatThrownBy(() -> p0.inspect(KeyEncoding.ofString("committed")))
          .isInstanceOf(IllegalStateException.class);
      second.flush();
      c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    }

    try (PartitionedDedupState third = open(topic, "third")) {
      KafkaConsumer<String, String> c = assignAndRestore(third, both);
      PartitionedDedupState.RestoreStats s0 =
          third.restores().stream().filter(s -> s.partition() == 0).findFirst().orElseThrow();
      // The tombstones the second owner wrote: nothing left to drop.
      assertThat(s0.entries()).isEqualTo(1);
      assertThat(s0.dropped()).isZero();
      c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    }
  }

  @Test
  void aChangelogWithAnotherPartitionCountIsRefused() throws Exception {
    String topic = KafkaBroker.uniqueTopic("mismatch");
    kafka.createTopic(topic, 3);
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      admin
          .createTopics(List.of(new NewTopic(topic + "-idem-changelog", 2, (short) 1)))
          .all()
          .get();
    }
    assertThatThrownBy(() -> open(topic, "x"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("has 2 partitions but the input topic");
  }

  @Test
  void aDirectoryWithOtherFilesOrHeldByAnotherStateIsRefusedNotEmptied() throws Exception {
    String topic = KafkaBroker.uniqueTopic("dir");
    kafka.createTopic(topic, 1);
    Path foreign = Files.createDirectories(dir.resolve("foreign"));
    Files.writeString(foreign.resolve("keep.txt"), "not idem's");

    assertThatThrownBy(() -> open(topic, "foreign"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("not an Idem Kafka state directory");
    assertThat(foreign.resolve("keep.txt")).hasContent("not idem's");

    try (PartitionedDedupState first = open(topic, "shared")) {
      assertThatThrownBy(() -> open(topic, "shared"))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("used by another consumer");
      assertThat(first.ownedPartitions()).isEmpty();
    }
    // closed: the directory is free again (and still marked as a state directory)
    open(topic, "shared").close();
  }

  private static void commit(Deduplicator d, String key) {
    Decision decision = d.reserve(KeyEncoding.ofString(key));
    assertThat(decision).isInstanceOf(Decision.Acquired.class);
    ((Decision.Acquired) decision).reservation().commit();
  }

  @Test
  void offsetsRefusedWhileACooperativeRebalanceIsPendingAreCommittedOnceItCompletes()
      throws Exception {
    String topic = KafkaBroker.uniqueTopic("unit-rebalance");
    String other = KafkaBroker.uniqueTopic("unit-other");
    String group = KafkaBroker.uniqueTopic("g-rebalance");
    kafka.createTopic(topic, 1);
    kafka.createTopic(other, 1);
    TopicPartition p0 = new TopicPartition(topic, 0);
    Map<String, Object> member = cooperativeMember(group);
    AtomicInteger handled = new AtomicInteger();
    try (PartitionedDedupState state = open(topic, "rebalance");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(member);
        KafkaConsumer<String, String> idle = new KafkaConsumer<>(member);
        KafkaConsumer<String, String> joiner = new KafkaConsumer<>(member);
        KafkaProducer<String, String> producer = kafka.producer();
        Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      PartitionedDedupLoop<String, String> loop = countingLoop(consumer, state, handled);
      // given a loop that owns the topic's partition, and a group member (on another topic) that
      // joined and stopped polling
      producer.send(new ProducerRecord<>(topic, "k-0", "v")).get();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                loop.pollOnce(Duration.ofMillis(100));
                return handled.get() == 1;
              });
      idle.subscribe(List.of(other));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                idle.poll(Duration.ofMillis(100));
                loop.pollOnce(Duration.ofMillis(100));
                return !idle.assignment().isEmpty();
              });

      // when a third member joins (the rebalance waits for the idle one) and the loop goes on
      // settling its partition's records until a commit of theirs is refused
      joiner.subscribe(List.of(other));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                joiner.poll(Duration.ofMillis(100));
                loop.pollOnce(Duration.ofMillis(100));
                return groupState(admin, group) == GroupState.PREPARING_REBALANCE;
              });
      long end = 1;
      while (committed(admin, group, p0) == end && end < 50) {
        producer.send(new ProducerRecord<>(topic, "k-" + end, "v")).get();
        end++;
        long want = end;
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () -> {
                  loop.pollOnce(Duration.ofMillis(100));
                  return handled.get() == want;
                });
      }
      assertThat(committed(admin, group, p0))
          .as("a commit was refused while the rebalance was pending")
          .isLessThan(end);
      assertThat(groupState(admin, group)).isEqualTo(GroupState.PREPARING_REBALANCE);

      // then once the idle member rejoins and the rebalance completes, the refused offsets are
      // committed although no record comes after them
      long last = end;
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                idle.poll(Duration.ofMillis(50));
                joiner.poll(Duration.ofMillis(50));
                loop.pollOnce(Duration.ofMillis(50));
                return committed(admin, group, p0) == last;
              });
      assertThat(handled.get()).isEqualTo(last);
    }
  }

  @Test
  void offsetsRefusedWhileARebalanceIsPendingAreCommittedWhenTheirPartitionIsRevoked()
      throws Exception {
    String topic = KafkaBroker.uniqueTopic("unit-revoke");
    String other = KafkaBroker.uniqueTopic("unit-revoke-other");
    String group = KafkaBroker.uniqueTopic("g-revoke");
    kafka.createTopic(topic, 2);
    kafka.createTopic(other, 1);
    List<TopicPartition> parts =
        List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
    Map<String, Object> member = cooperativeMember(group);
    AtomicInteger handled = new AtomicInteger();
    try (PartitionedDedupState state = open(topic, "revoke");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(member);
        KafkaConsumer<String, String> idle = new KafkaConsumer<>(member);
        KafkaConsumer<String, String> joiner = new KafkaConsumer<>(member);
        KafkaProducer<String, String> producer = kafka.producer();
        Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      PartitionedDedupLoop<String, String> loop = countingLoop(consumer, state, handled);
      // given a loop that owns both partitions, and a group member (on another topic) that joined
      // and stopped polling
      long[] end = new long[2];
      for (TopicPartition tp : parts) {
        producer.send(new ProducerRecord<>(topic, tp.partition(), "k-" + tp + "-first", "v")).get();
        end[tp.partition()] = 1;
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                loop.pollOnce(Duration.ofMillis(100));
                return handled.get() == 2;
              });
      idle.subscribe(List.of(other));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                idle.poll(Duration.ofMillis(100));
                loop.pollOnce(Duration.ofMillis(100));
                return !idle.assignment().isEmpty();
              });

      // when a member joins for the loop's topic (the rebalance waits for the idle one) and the
      // loop goes on settling records of both partitions until commits of both are refused
      joiner.subscribe(List.of(topic));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                joiner.poll(Duration.ofMillis(100));
                loop.pollOnce(Duration.ofMillis(100));
                return groupState(admin, group) == GroupState.PREPARING_REBALANCE;
              });
      for (int round = 0;
          round < 50
              && (committed(admin, group, parts.get(0)) == end[0]
                  || committed(admin, group, parts.get(1)) == end[1]);
          round++) {
        for (TopicPartition tp : parts) {
          producer
              .send(new ProducerRecord<>(topic, tp.partition(), "k-" + tp + "-" + round, "v"))
              .get();
          end[tp.partition()]++;
        }
        long want = end[0] + end[1];
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () -> {
                  loop.pollOnce(Duration.ofMillis(100));
                  return handled.get() == want;
                });
      }
      for (TopicPartition tp : parts) {
        assertThat(committed(admin, group, tp))
            .as("a commit of %s was refused while the rebalance was pending", tp)
            .isLessThan(end[tp.partition()]);
      }

      // then once the idle member rejoins, the partition that moves to the joiner is revoked
      // from the loop, which commits its refused offset on the way out: the joiner starts
      // after the records the loop settled
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                idle.poll(Duration.ofMillis(50));
                loop.pollOnce(Duration.ofMillis(50));
                joiner.poll(Duration.ofMillis(50));
                return !joiner.assignment().isEmpty();
              });
      TopicPartition moved = joiner.assignment().iterator().next();
      assertThat(committed(admin, group, moved)).isEqualTo(end[moved.partition()]);
      assertThat(handled.get()).isEqualTo((int) (end[0] + end[1]));
    }
  }

  @Test
  void aMissingInputTopicFailsTheOpenWithWhatToCreate() {
    String topic = KafkaBroker.uniqueTopic("missing");
    assertThatThrownBy(() -> open(topic, "missing"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("the input topic " + topic + " does not exist")
        .hasMessageContaining("--create --topic " + topic);
  }

  /** A group member on the cooperative assignor that notices a rebalance within 100 ms. */
  private static Map<String, Object> cooperativeMember(String group) {
    Map<String, Object> member = kafka.consumerConfig(group);
    member.put(
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        CooperativeStickyAssignor.class.getName());
    member.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 100);
    member.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 120_000);
    return member;
  }

  /** A subscribed loop on {@code state} whose handler counts the records it acts on. */
  private static PartitionedDedupLoop<String, String> countingLoop(
      KafkaConsumer<String, String> consumer, PartitionedDedupState state, AtomicInteger handled) {
    return PartitionedDedupLoop.<String, String>builder(
            consumer,
            state,
            store -> Deduplicator.builder(store, SCOPE).build(),
            RecordKeys.recordKey(),
            r -> handled.incrementAndGet())
        .build()
        .subscribe();
  }

  private static GroupState groupState(Admin admin, String group) throws Exception {
    return admin
        .describeConsumerGroups(List.of(group))
        .all()
        .get(30, TimeUnit.SECONDS)
        .get(group)
        .groupState();
  }

  private static long committed(Admin admin, String group, TopicPartition tp) throws Exception {
    OffsetAndMetadata o =
        admin
            .listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata()
            .get(30, TimeUnit.SECONDS)
            .get(tp);
    return o == null ? 0 : o.offset();
  }
}
