package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.store.memory.MemoryDedupStore;
import example.kafka.OrdersConsumer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Runs the example under {@code examples/kafka} against a real broker. */
class ExampleConsumerTest {
  @Test
  void theExampleShipsEachOrderOnce() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start();
        MemoryDedupStore store = MemoryDedupStore.builder().build()) {
      String topic = KafkaBroker.uniqueTopic("orders");
      kafka.createTopic(topic, 2);
      try (KafkaProducer<String, String> producer = kafka.producer()) {
        for (String id : new String[] {"o1", "o2", "o1", "o3", "o2"}) {
          producer.send(new ProducerRecord<>(topic, id, "ship " + id));
        }
      }
      List<String> shipped = new CopyOnWriteArrayList<>();
      try (OrdersConsumer orders =
          new OrdersConsumer(kafka.bootstrapServers(), topic, store, shipped::add)) {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(
                () -> {
                  orders.pollOnce();
                  return shipped.size() >= 3;
                });
        for (int i = 0; i < 3; i++) {
          orders.pollOnce();
        }
      }
      assertThat(shipped).containsExactlyInAnyOrder("ship o1", "ship o2", "ship o3");
    }
  }
}
