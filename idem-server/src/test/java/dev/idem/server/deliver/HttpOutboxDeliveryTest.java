package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.ManualTimeSource;
import dev.idem.server.deliver.TestReceiver.Answer;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The async path end to end: outbox, dispatcher, HTTP sink, a real receiver. */
class HttpOutboxDeliveryTest {
  private final ManualTimeSource clock = new ManualTimeSource();
  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final DedupStoreOutbox<MemoryDedupStore> outbox =
      new DedupStoreOutbox<>(store, clock, () -> {});
  private final RecordingListener listener = new RecordingListener();
  private final TestReceiver receiver;
  private final Sink sink;
  private final OutboxDispatcher dispatcher;

  HttpOutboxDeliveryTest() throws Exception {
    receiver = new TestReceiver();
    sink =
        Sinks.http(new HttpSinkSettings(receiver.uri("/orders"), Map.of(), Duration.ofSeconds(5)));
    dispatcher =
        OutboxDispatcher.builder("orders", store, sink)
            .timeSource(clock)
            .listener(listener)
            .jitter(() -> 1.0)
            .retryPolicy(new RetryPolicy(5, Duration.ofSeconds(1), Duration.ofMinutes(1)))
            .pollInterval(Duration.ofMillis(20))
            .start();
  }

  @AfterEach
  void stop() {
    dispatcher.close();
    sink.close();
    receiver.close();
    outbox.close();
  }

  private void enqueue(String key) {
    byte[] body = ("{\"order\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    outbox.enqueue(
        "orders", DeliveryCodec.encode(new Delivery("orders", key, null, body, Map.of())));
    dispatcher.wakeUp();
  }

  @Test
  void a503IsRetriedWithTheSameIdempotencyKeyAndA400IsDeadLettered() {
    // Given the receiver is down for the first attempt, then refuses the second event
    receiver.answer(Answer.of(503, "", "Retry-After", "2"), Answer.code(200), Answer.code(400));

    // When the first event is enqueued, its first attempt fails and waits 2s (Retry-After)
    enqueue("order-1");
    await().atMost(Duration.ofSeconds(30)).until(() -> listener.events().size() == 1);
    assertThat(listener.events().get(0)).startsWith("retry orders 1 HTTP 503");
    clock.advance(Duration.ofSeconds(2));
    dispatcher.wakeUp();

    // Then the retry delivers it, with the same key
    await().atMost(Duration.ofSeconds(30)).until(() -> receiver.received().size() == 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> store.depth("orders") == 0);
    assertThat(receiver.received())
        .extracting(r -> r.header("Idempotency-Key"))
        .containsExactly("order-1", "order-1");

    // And a 400 for the next event goes straight to the dead letters
    enqueue("order-2");
    await().atMost(Duration.ofSeconds(30)).until(() -> store.deadLetters("orders", 10).size() == 1);
    assertThat(store.deadLetters("orders", 10).get(0).reason())
        .startsWith("not retryable: HTTP 400");
    assertThat(receiver.received()).hasSize(3);
  }
}
