package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryCodec;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A pipeline with ordering enqueues through {@link OrderingKeyOutbox}: the store then learns each
 * entry's ordering key from its delivery and hands out one entry per key at a time.
 */
class OrderingKeyOutboxTest {
  private static final Scope SCOPE = Scope.of("orders");
  private static final Ttl TTL = new Ttl(3_600_000, Expiry.SLIDING);
  private static final long NOW = 1_800_000_000_000L;

  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final OrderingKeyOutbox outbox = new OrderingKeyOutbox(store, DeliveryCodec::decode);

  private void accept(long n, String orderingKey) {
    DedupKey key = DedupKey.ofWords(n, n, n, n);
    store.reserve(new ReserveRequest(SCOPE, key, null, n, NOW, 60_000, TTL));
    byte[] payload =
        DeliveryCodec.encode(
            new Delivery(
                "orders",
                "orders:" + n,
                orderingKey,
                ("{\"n\":" + n + "}").getBytes(StandardCharsets.UTF_8),
                Map.of()));
    assertThat(
            outbox.commitAndEnqueue(
                new CommitRequest(SCOPE, key, n, NOW, TTL, null),
                List.of(new OutboxMessage("orders", key, payload))))
        .isEqualTo(SettleResult.APPLIED);
  }

  @Test
  void theStoreLearnsTheOrderingKeyFromTheDeliveryAndHandsOutOneEntryPerKey() {
    // given two events of one customer, one of another, and one without an ordering key
    accept(1, "customer-1");
    accept(2, "customer-1");
    accept(3, "customer-2");
    accept(4, null);

    // when
    List<OutboxRecord> claimed = outbox.claim("orders", 10, NOW, 30_000);

    // then the second event of customer-1 waits for the first
    assertThat(claimed)
        .extracting(r -> DeliveryCodec.decode(r.payload()).idempotencyKey())
        .containsExactly("orders:1", "orders:3", "orders:4");
    assertThat(outbox.acknowledge(claimed.get(0))).isTrue();
    assertThat(outbox.claim("orders", 10, NOW, 30_000))
        .extracting(r -> DeliveryCodec.decode(r.payload()).idempotencyKey())
        .containsExactly("orders:2");
  }

  @Test
  void anUndecodablePayloadIsEnqueuedAsItIs() {
    DedupKey key = DedupKey.ofWords(9, 9, 9, 9);
    store.reserve(new ReserveRequest(SCOPE, key, null, 9, NOW, 60_000, TTL));
    outbox.commitAndEnqueue(
        new CommitRequest(SCOPE, key, 9, NOW, TTL, null),
        List.of(new OutboxMessage("orders", key, new byte[] {42})));

    assertThat(outbox.claim("orders", 10, NOW, 30_000)).hasSize(1);
  }
}
