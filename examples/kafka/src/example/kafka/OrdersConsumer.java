package example.kafka;

import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.kafka.DedupPollLoop;
import dev.idem.kafka.RecordKeys;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A plain Kafka consumer whose work runs once per order id, even across redeliveries and
 * rebalances. With a shared store (Redis, PostgreSQL) every member of the group shares the keys.
 */
public final class OrdersConsumer implements AutoCloseable {
  private final KafkaConsumer<String, String> consumer;
  private final DedupPollLoop<String, String> loop;

  /**
   * Subscribes to a topic.
   *
   * @param bootstrapServers the brokers
   * @param topic the topic of orders, keyed by order id
   * @param store where order ids are kept
   * @param ship the work to run once per order
   */
  public OrdersConsumer(
      String bootstrapServers, String topic, DedupStore store, Consumer<String> ship) {
    consumer =
        new KafkaConsumer<>(
            Map.of(
                "bootstrap.servers", bootstrapServers,
                "group.id", "shipping",
                "enable.auto.commit", false, // the loop commits offsets after the keys
                "auto.offset.reset", "earliest",
                "key.deserializer", StringDeserializer.class,
                "value.deserializer", StringDeserializer.class));
    consumer.subscribe(List.of(topic));
    Deduplicator dedup = Deduplicator.builder(store, Scope.of("shipping")).build();
    loop =
        DedupPollLoop.builder(consumer, dedup, RecordKeys.recordKey(), r -> ship.accept(r.value()))
            .build();
  }

  /**
   * Polls once; call it in a loop (or call {@code run} on the loop until {@code stop}).
   *
   * @return what the poll did
   */
  public DedupPollLoop.PollSummary pollOnce() {
    return loop.pollOnce(Duration.ofMillis(200));
  }

  @Override
  public void close() {
    consumer.close();
  }
}
