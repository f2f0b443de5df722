package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.kafka.DedupPollLoop.FailureAction;
import dev.idem.kafka.DedupPollLoop.PollSummary;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.key.KeyEncoding;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link DedupPollLoop} against a real in-process Kafka broker, on the memory store (subclasses:
 * other stores).
 */
class DedupPollLoopTest {
  private static KafkaBroker kafka;

  /** The store every consumer of a test shares; the memory store here. */
  DedupStore openStore() {
    return MemoryDedupStore.builder().build();
  }

  private final AtomicInteger duplicateDecisions = new AtomicInteger();
  private DedupStore store;
  private Deduplicator dedup;
  private final Map<String, AtomicInteger> acted = new ConcurrentHashMap<>();
  private final List<String> order = new CopyOnWriteArrayList<>();
  private String topic;
  private String group;
  private KafkaConsumer<String, String> consumer;

  @BeforeAll
  static void broker() throws Exception {
    kafka = KafkaBroker.start();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    kafka.close();
  }

  @BeforeEach
  void topic() throws Exception {
    store = openStore();
    dedup =
        Deduplicator.builder(
                store, Scope.of("kafka-loop-" + UUID.randomUUID().toString().substring(0, 8)))
            .listener(
                new DedupListener() {
                  @Override
                  public void onDuplicate(Scope scope, DedupKey key) {
                    duplicateDecisions.incrementAndGet();
                  }
                })
            .build();
    topic = KafkaBroker.uniqueTopic("orders");
    group = KafkaBroker.uniqueTopic("group");
  }

  @AfterEach
  void close() {
    if (consumer != null) {
      consumer.close(Duration.ofSeconds(5));
    }
    if (store != null) {
      dedup.clear();
      store.close();
    }
  }

  private void produce(String... keys) {
    try (KafkaProducer<String, String> producer = kafka.producer()) {
      for (String key : keys) {
        producer.send(new ProducerRecord<>(topic, key, "value-of-" + key));
      }
      producer.flush();
    }
  }

  private KafkaConsumer<String, String> subscribed() {
    KafkaConsumer<String, String> c = kafka.consumer(group);
    c.subscribe(List.of(topic));
    return c;
  }

  private void act(ConsumerRecord<String, String> r) {
    acted.computeIfAbsent(r.key(), k -> new AtomicInteger()).incrementAndGet();
    order.add(r.key());
  }

  private int actedOn(String key) {
    AtomicInteger n = acted.get(key);
    return n == null ? 0 : n.get();
  }

  /** Polls until {@code done} holds, failing after 30 s; returns the summed summaries. */
  private PollSummary pollUntil(DedupPollLoop<String, String> loop, Supplier<Boolean> done) {
    int[] sum = new int[4];
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              PollSummary s = loop.pollOnce(Duration.ofMillis(200));
              sum[0] += s.processed();
              sum[1] += s.duplicates();
              sum[2] += s.deferred();
              sum[3] += s.skipped();
              return done.get();
            });
    return new PollSummary(sum[0], sum[1], sum[2], sum[3]);
  }

  private long committedOffset(int partition) {
    OffsetAndMetadata o =
        consumer.committed(Set.of(new TopicPartition(topic, partition))).values().iterator().next();
    return o == null ? -1 : o.offset();
  }

  @Test
  void eachKeyIsActedOnOnceAndTheOffsetsAreCommittedAfterTheKeys() throws Exception {
    kafka.createTopic(topic, 1);
    produce("a", "b", "a", "c", "b", "a");
    consumer = subscribed();
    DedupPollLoop<String, String> loop =
        DedupPollLoop.builder(consumer, dedup, RecordKeys.recordKey(), this::act).build();

    PollSummary total = pollUntil(loop, () -> committedOffset(0) == 6);

    assertThat(order).containsExactly("a", "b", "c");
    assertThat(total.processed()).isEqualTo(3);
    assertThat(total.duplicates()).isEqualTo(3);
    assertThat(dedup.inspect(KeyEncoding.ofString("a"))).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aFailedRecordIsRetriedInPlaceAndTheRecordsAfterItWait() throws Exception {
    kafka.createTopic(topic, 1);
    produce("a", "b", "c");
    consumer = subscribed();
    AtomicInteger attemptsOfB = new AtomicInteger();
    DedupPollLoop<String, String> loop =
        DedupPollLoop.<String, String>builder(
                consumer,
                dedup,
                RecordKeys.recordKey(),
                r -> {
                  if (r.key().equals("b") && attemptsOfB.incrementAndGet() == 1) {
                    throw new IllegalStateException("b failed once");
                  }
                  act(r);
                })
            .retryBackoff(Duration.ZERO)
            .build();

    pollUntil(loop, () -> committedOffset(0) == 3);

    assertThat(attemptsOfB).hasValue(2);
    assertThat(order).containsExactly("a", "b", "c");
  }

  @Test
  void aSkippedFailureMovesOnAndReleasesItsKey() throws Exception {
    kafka.createTopic(topic, 1);
    produce("a", "b", "c");
    consumer = subscribed();
    List<String> deadLetters = new CopyOnWriteArrayList<>();
    DedupPollLoop<String, String> loop =
        DedupPollLoop.<String, String>builder(
                consumer,
                dedup,
                RecordKeys.recordKey(),
                r -> {
                  if (r.key().equals("b")) {
                    throw new IllegalStateException("b always fails");
                  }
                  act(r);
                })
            .onFailure(
                (r, e) -> {
                  deadLetters.add(r.key());
                  return FailureAction.SKIP;
                })
            .build();

    pollUntil(loop, () -> committedOffset(0) == 3);

    assertThat(order).containsExactly("a", "c");
    assertThat(deadLetters).containsExactly("b");
    assertThat(dedup.inspect(KeyEncoding.ofString("b"))).isInstanceOf(KeyState.Absent.class);
  }

  @Test
  void aKeyInFlightElsewhereHoldsItsPartitionUntilTheHolderSettles() throws Exception {
    kafka.createTopic(topic, 1);
    Decision.Acquired elsewhere = (Decision.Acquired) dedup.reserve(KeyEncoding.ofString("b"));
    produce("a", "b", "c");
    consumer = subscribed();
    ManualTimeSource clock = new ManualTimeSource();
    DedupPollLoop<String, String> loop =
        DedupPollLoop.builder(consumer, dedup, RecordKeys.recordKey(), this::act)
            .retryBackoff(Duration.ofSeconds(1))
            .timeSource(clock)
            .build();

    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> loop.pollOnce(Duration.ofMillis(200)).deferred() == 1);
    assertThat(order).containsExactly("a");
    assertThat(committedOffset(0)).isEqualTo(1);
    // Paused: until the back-off passes, polls return nothing, however often.
    for (int i = 0; i < 3; i++) {
      assertThat(loop.pollOnce(Duration.ofMillis(50))).isEqualTo(new PollSummary(0, 0, 0, 0));
    }

    elsewhere.reservation().commit();
    clock.advance(Duration.ofSeconds(2));
    pollUntil(loop, () -> committedOffset(0) == 3);

    assertThat(order).containsExactly("a", "c");
  }

  @Test
  void aRebalanceAndACrashBeforeTheOffsetCommitActOnNoRecordTwice() throws Exception {
    int keys = 300;
    kafka.createTopic(topic, 4);
    List<String> firsts = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      firsts.add("order-" + i);
    }
    List<String> early = firsts.subList(0, keys / 2);
    List<String> late = firsts.subList(keys / 2, keys);
    produce(early.toArray(new String[0]));

    CrashingConsumer a = new CrashingConsumer(kafka.consumer(group));
    a.delegate().subscribe(List.of(topic));
    DedupPollLoop<String, String> loopA =
        DedupPollLoop.builder(a.proxy(), dedup, RecordKeys.recordKey(), r -> actAndCount(a, r))
            .build();
    Worker workerA = Worker.start("consumer-a", () -> loopA.pollOnce(Duration.ofMillis(100)));
    await().atMost(Duration.ofSeconds(30)).until(() -> acted.size() >= 60);

    // B joins the group: a real rebalance while A is mid-run.
    AtomicInteger actedByB = new AtomicInteger();
    AtomicBoolean assignedToB = new AtomicBoolean();
    consumer = kafka.consumer(group);
    consumer.subscribe(
        List.of(topic),
        new ConsumerRebalanceListener() {
          @Override
          public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

          @Override
          public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
              assignedToB.set(true);
            }
          }
        });
    DedupPollLoop<String, String> loopB =
        DedupPollLoop.builder(
                consumer,
                dedup,
                RecordKeys.recordKey(),
                r -> {
                  act(r);
                  actedByB.incrementAndGet();
                })
            .build();
    Worker workerB = Worker.start("consumer-b", () -> loopB.pollOnce(Duration.ofMillis(100)));
    try {
      await().atMost(Duration.ofSeconds(30)).untilTrue(assignedToB);

      // A dies between its key commit and its offset commit, in its next batch that acts.
      a.crashAtNextOffsetCommit();
      produce(late.toArray(new String[0]));
      produce(firsts.toArray(new String[0])); // every key a second time
      await().atMost(Duration.ofSeconds(30)).until(workerA::failed);
      assertThat(workerA.failure()).isInstanceOf(CrashingConsumer.SimulatedCrash.class);
      int actedInLostBatch = a.actedSinceLastOffsetCommit();
      a.delegate().close(Duration.ofSeconds(5));

      // B takes A's partitions over and reads A's lost batch again.
      await().atMost(Duration.ofSeconds(60)).until(() -> acted.size() == keys);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> duplicateDecisions.get() >= keys + actedInLostBatch);

      for (String key : firsts) {
        assertThat(actedOn(key)).as("times %s was acted on", key).isEqualTo(1);
      }
      assertThat(actedInLostBatch).as("records acted on in A's lost batch").isPositive();
      assertThat(actedByB.get()).as("records B acted on").isPositive();
    } finally {
      workerA.stop();
      workerB.stop();
    }
    assertThat(workerB.failure()).isNull();
  }

  private void actAndCount(CrashingConsumer a, ConsumerRecord<String, String> r) {
    act(r);
    a.acted();
  }

  /** Runs one loop step repeatedly on its own thread (a consumer is single-threaded). */
  private static final class Worker {
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    private Worker(String name, Runnable step) {
      thread =
          new Thread(
              () -> {
                try {
                  while (running) {
                    step.run();
                  }
                } catch (Throwable t) {
                  failure = t;
                }
              },
              name);
    }

    static Worker start(String name, Runnable step) {
      Worker w = new Worker(name, step);
      w.thread.start();
      return w;
    }

    boolean failed() {
      return failure != null;
    }

    Throwable failure() {
      return failure;
    }

    void stop() throws InterruptedException {
      running = false;
      thread.join(TimeUnit.SECONDS.toMillis(30));
    }
  }
}
