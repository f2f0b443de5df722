package dev.idem.server.pipeline;

import static dev.idem.server.support.PipelineAnswers.answer;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.DeliveryCodec;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.TestParts;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.store.memory.MemoryDedupStore;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 11: in async mode the pipeline gives each outbox message the event's ordering key itself,
 * so the store hands out one entry per ordering key at a time, oldest first, on every instance and
 * across restarts (this replaced the {@code OrderingKeyOutbox} wrapper that decoded payloads to
 * fill the key in).
 */
class PipelineOrderingKeyTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  final ManualTimeSource time = new ManualTimeSource();
  final List<OutboxMessage> enqueued = new ArrayList<>();

  final MemoryDedupStore store = MemoryDedupStore.builder().build();

  /** An ordering step keyed on the body's "customer" field (no field: not ordered). */
  static final OrderingStep BY_CUSTOMER =
      request -> {
        String customer;
        try {
          var node = JSON.readTree(request.body()).get("customer");
          customer = node == null ? null : node.asText();
        } catch (IOException e) {
          customer = null;
        }
        if (customer == null) {
          return null;
        }
        String key = customer;
        return new OrderingStep.Turn() {
          @Override
          public String key() {
            return key;
          }

          @Override
          public void close() {}
        };
      };

  Pipeline pipeline() {
    PipelineSettings s = PipelineTest.settings("{ key: source.id }", "{ mode: async, stdout: {} }");
    Recorded outbox = recording(store, enqueued);
    return Pipeline.builder(s)
        .keys(TestParts.idField())
        .timeSource(time)
        .deliverer(TestParts.retrying(new RecordingSink(), 0))
        .dedup(
            Deduplicator.builder(outbox, Scope.of("p"))
                .config(s.dedup().config())
                .timeSource(time)
                .build(),
            outbox)
        .ordering(BY_CUSTOMER)
        .outboxEncoder(DeliveryCodec::encode)
        .build();
  }

  static InboundRequest event(String json) {
    return new InboundRequest(json.getBytes(StandardCharsets.UTF_8), name -> null);
  }

  @Test
  void theEnqueuedMessagesCarryTheEventsOrderingKeyAndTheStoreHandsOutOneEntryPerKey() {
    // given an async pipeline ordered by customer
    Pipeline p = pipeline();

    // when two events of one customer, one of another and one without a customer are accepted
    for (String body :
        List.of(
            "{\"id\":\"1\",\"customer\":\"c-1\"}",
            "{\"id\":\"2\",\"customer\":\"c-1\"}",
            "{\"id\":\"3\",\"customer\":\"c-2\"}",
            "{\"id\":\"4\"}")) {
      assertThat(answer(p, event(body))).isEqualTo(Answer.ACCEPTED);
    }

    // then each message carries its event's ordering key (none for the unordered one)
    assertThat(enqueued)
        .extracting(OutboxMessage::orderingKey)
        .containsExactly("c-1", "c-1", "c-2", null);

    // and the store hands out only the head of each key: event 2 waits for event 1
    List<OutboxRecord> claimed = store.claim("p", 10, time.wallMillis(), 30_000);
    assertThat(claimed)
        .extracting(r -> DeliveryCodec.decode(r.payload()).idempotencyKey())
        .containsExactly(
            "p:" + TestParts.keyOf("1").toHex(),
            "p:" + TestParts.keyOf("3").toHex(),
            "p:" + TestParts.keyOf("4").toHex());
    assertThat(store.acknowledge(claimed.get(0))).isTrue();
    assertThat(store.claim("p", 10, time.wallMillis(), 30_000))
        .extracting(r -> DeliveryCodec.decode(r.payload()).idempotencyKey())
        .containsExactly("p:" + TestParts.keyOf("2").toHex());
  }

  @Test
  void everyFanOutChildCarriesTheOrderingKey() {
    PipelineSettings s = PipelineTest.settings("{ key: source.id }", "{ mode: async, stdout: {} }");
    Pipeline p =
        Pipeline.builder(s)
            .keys(TestParts.idField())
            .timeSource(time)
            .deliverer(TestParts.retrying(new RecordingSink(), 0))
            .dedup(
                Deduplicator.builder(recording(store, enqueued), Scope.of("p"))
                    .config(s.dedup().config())
                    .timeSource(time)
                    .build(),
                recording(store, enqueued))
            .ordering(BY_CUSTOMER)
            .transform(
                b ->
                    List.of(
                        "{\"line\":1}".getBytes(StandardCharsets.UTF_8),
                        "{\"line\":2}".getBytes(StandardCharsets.UTF_8)))
            .outboxEncoder(DeliveryCodec::encode)
            .build();

    assertThat(answer(p, event("{\"id\":\"f\",\"customer\":\"c-9\"}"))).isEqualTo(Answer.ACCEPTED);

    assertThat(enqueued).extracting(OutboxMessage::orderingKey).containsExactly("c-9", "c-9");
  }

  /** The memory store as one type: a dedup store with an outbox. */
  interface Recorded extends DedupStore, OutboxStore {}

  /** The store, recording the messages of each {@code commitAndEnqueue}. */
  static Recorded recording(MemoryDedupStore store, List<OutboxMessage> enqueued) {
    return (Recorded)
        Proxy.newProxyInstance(
            Recorded.class.getClassLoader(),
            new Class<?>[] {Recorded.class},
            (proxy, method, args) -> {
              if (method.getName().equals("commitAndEnqueue") && args[1] instanceof List<?> list) {
                for (Object m : list) {
                  enqueued.add((OutboxMessage) m);
                }
              }
              try {
                return method.invoke(store, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }
}
