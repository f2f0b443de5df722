package dev.idem.server.source.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.GetResponse;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.deliver.Sink;
import dev.idem.server.deliver.Sinks;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** deliver.rabbitmq against the real broker: confirmed, persistent, keyed; unroutable fails. */
class RabbitMqSinkTest {
  private TestBroker broker;

  @BeforeEach
  void broker() throws Exception {
    broker = TestBroker.require();
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (broker != null) {
      broker.close();
    }
  }

  private static Delivery delivery(String key, String body) {
    return new Delivery(
        "p", key, "customer-1", body.getBytes(StandardCharsets.UTF_8), Map.of("X-Extra", "yes"));
  }

  @Test
  void publishesPersistentWithTheIdempotencyKeyAsMessageIdAndHeaderOnceConfirmed()
      throws Exception {
    // Given a queue behind the default exchange
    String q = broker.queue("sink");
    try (Sink sink = Sinks.rabbitmq(broker.uri, "", q, Duration.ofSeconds(5))) {
      // When two events are delivered
      DeliveryOutcome first = sink.deliver(delivery("p:aa", "{\"n\":1}"));
      DeliveryOutcome second = sink.deliver(delivery("p:bb", "{\"n\":2}"));

      // Then both were confirmed and are in the queue, in order, keyed and persistent
      assertThat(first).isInstanceOf(DeliveryOutcome.Delivered.class);
      assertThat(second).isInstanceOf(DeliveryOutcome.Delivered.class);
      List<GetResponse> got = broker.drain(q);
      assertThat(got).hasSize(2);
      GetResponse m = got.get(0);
      assertThat(new String(m.getBody(), StandardCharsets.UTF_8)).isEqualTo("{\"n\":1}");
      assertThat(m.getProps().getMessageId()).isEqualTo("p:aa");
      assertThat(m.getProps().getDeliveryMode()).isEqualTo(2);
      assertThat(m.getProps().getContentType()).isEqualTo("application/json");
      assertThat(AmqpHeaders.text(m.getProps().getHeaders().get("Idempotency-Key")))
          .isEqualTo("p:aa");
      assertThat(AmqpHeaders.text(m.getProps().getHeaders().get("X-Extra"))).isEqualTo("yes");
      assertThat(got.get(1).getProps().getMessageId()).isEqualTo("p:bb");
    }
  }

  @Test
  void anUnroutableMessageOrAMissingExchangeIsARetryableFailureAndTheSinkGoesOn() throws Exception {
    // Given an exchange with no queue bound
    String x = broker.exchange("unbound");
    try (Sink unbound = Sinks.rabbitmq(broker.uri, x, "nowhere", Duration.ofSeconds(5));
        Sink missing =
            Sinks.rabbitmq(broker.uri, TestBroker.unique("missing"), "k", Duration.ofSeconds(5))) {
      // When an event is delivered there, or to an exchange that does not exist
      DeliveryOutcome returned = unbound.deliver(delivery("p:cc", "{}"));
      DeliveryOutcome noExchange = missing.deliver(delivery("p:dd", "{}"));

      // Then both are retryable failures that say why
      assertThat(returned)
          .isInstanceOfSatisfying(
              DeliveryOutcome.Failed.class,
              f -> {
                assertThat(f.retryable()).isTrue();
                assertThat(f.error()).contains("unroutable").contains("bind a queue");
              });
      assertThat(noExchange)
          .isInstanceOfSatisfying(
              DeliveryOutcome.Failed.class, f -> assertThat(f.retryable()).isTrue());
      // and the sink still delivers once a queue is bound
      String q = broker.queue("bound");
      broker.channel.queueBind(q, x, "nowhere");
      assertThat(unbound.deliver(delivery("p:ee", "{}")))
          .isInstanceOf(DeliveryOutcome.Delivered.class);
      assertThat(broker.drain(q)).hasSize(1);
    }
  }

  @Test
  void anUnreachableBrokerIsARetryableFailure() {
    try (Sink sink =
        Sinks.rabbitmq(
            URI.create("amqp://guest:guest@127.0.0.1:1/"), "", "q", Duration.ofSeconds(2))) {
      assertThat(sink.deliver(delivery("p:ff", "{}")))
          .isInstanceOfSatisfying(
              DeliveryOutcome.Failed.class,
              f -> {
                assertThat(f.retryable()).isTrue();
                assertThat(f.error()).contains("not reachable").doesNotContain("guest:guest");
              });
    }
  }
}
