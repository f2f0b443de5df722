package dev.idem.kafka.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.kafka.RecordKeys;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.key.KeyEncoding;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.util.backoff.FixedBackOff;

/** {@link IdemRecordInterceptor} in a real Spring Kafka listener container and broker. */
class IdemRecordInterceptorTest {
  private static KafkaBroker kafka;

  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final AtomicInteger inFlightAnswers = new AtomicInteger();
  private final Deduplicator dedup =
      Deduplicator.builder(store, Scope.of("spring-kafka"))
          .listener(
              new DedupListener() {
                @Override
                public void onInFlight(Scope scope, DedupKey key) {
                  inFlightAnswers.incrementAndGet();
                }
              })
          .build();
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
  private final List<String> succeeded = new CopyOnWriteArrayList<>();
  private String topic;
  private ConcurrentMessageListenerContainer<String, String> container;

  @BeforeAll
  static void broker() throws Exception {
    kafka = KafkaBroker.start();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    kafka.close();
  }

  @BeforeEach
  void topic() {
    topic = KafkaBroker.uniqueTopic("payments");
  }

  @AfterEach
  void close() {
    if (container != null) {
      container.stop();
    }
    store.close();
  }

  /** The listener: fails the first attempt of key "flaky", records every success. */
  private void listen(ConsumerRecord<String, String> r) {
    int attempt = attempts.computeIfAbsent(r.key(), k -> new AtomicInteger()).incrementAndGet();
    if (r.key().equals("flaky") && attempt == 1) {
      throw new IllegalStateException("flaky failed once");
    }
    succeeded.add(r.key());
  }

  private void startContainer(int concurrency) {
    ContainerProperties props = new ContainerProperties(topic);
    props.setMessageListener((MessageListener<String, String>) this::listen);
    container =
        new ConcurrentMessageListenerContainer<>(
            new DefaultKafkaConsumerFactory<>(kafka.consumerConfig(KafkaBroker.uniqueTopic("g"))),
            props);
    container.setConcurrency(concurrency);
    container.setRecordInterceptor(
        IdemRecordInterceptor.builder(dedup, RecordKeys.<String, String>recordKey())
            .inFlightPollInterval(Duration.ofMillis(20))
            .build());
    container.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(0L, 5L)));
    container.start();
  }

  private void produce(String... keys) {
    try (KafkaProducer<String, String> producer = kafka.producer()) {
      for (String key : keys) {
        producer.send(new ProducerRecord<>(topic, key, "v"));
      }
      producer.flush();
    }
  }

  @Test
  void duplicatesAreSkippedAndAFailedRecordIsRetriedByTheErrorHandler() throws Exception {
    kafka.createTopic(topic, 3);
    startContainer(3);
    produce("a", "b", "flaky", "a", "c", "b", "flaky", "a");

    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> succeeded.size() == 4 && attempts.get("flaky").get() == 2);

    assertThat(succeeded).containsExactlyInAnyOrder("a", "b", "flaky", "c");
    assertThat(attempts.get("a")).hasValue(1);
    assertThat(dedup.inspect(KeyEncoding.ofString("flaky"))).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aRecordWhoseKeyIsInFlightWaitsAndRunsWhenTheHolderFails() throws Exception {
    kafka.createTopic(topic, 1);
    Decision.Acquired elsewhere = (Decision.Acquired) dedup.reserve(KeyEncoding.ofString("b"));
    startContainer(1);
    produce("a", "b", "c");

    await().atMost(Duration.ofSeconds(30)).until(() -> inFlightAnswers.get() >= 3);
    assertThat(succeeded).containsExactly("a");

    elsewhere.reservation().release();

    await().atMost(Duration.ofSeconds(30)).until(() -> succeeded.size() == 3);
    assertThat(succeeded).containsExactly("a", "b", "c");
  }

  @Test
  void aRecordWhoseKeyIsInFlightIsSkippedWhenTheHolderCommits() throws Exception {
    kafka.createTopic(topic, 1);
    Decision.Acquired elsewhere = (Decision.Acquired) dedup.reserve(KeyEncoding.ofString("b"));
    startContainer(1);
    produce("a", "b", "c");

    await().atMost(Duration.ofSeconds(30)).until(() -> inFlightAnswers.get() >= 3);
    elsewhere.reservation().commit();

    await().atMost(Duration.ofSeconds(30)).until(() -> succeeded.size() == 2);
    assertThat(succeeded).containsExactly("a", "c");
    assertThat(attempts).doesNotContainKey("b");
  }
}
