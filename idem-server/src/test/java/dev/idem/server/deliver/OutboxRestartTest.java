package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.ManualTimeSource;
import dev.idem.spi.OutboxRecord;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 §3: after kill -9 with async delivery, the entries the dead process had claimed stayed
 * hidden for the whole claim timeout. Two RocksDB store instances on one directory stand for two
 * lives of the process: the first claims entries and dies without settling them; the second's
 * dispatcher delivers every one of them at once, with the clock standing still (so no claim can
 * have run out).
 */
class OutboxRestartTest {
  @TempDir Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();
  private final ScriptedSink sink = new ScriptedSink();

  private static byte[] delivery(String key) {
    byte[] body = ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    return DeliveryCodec.encode(
        new Delivery(OutboxDispatcherContract.QUEUE, key, null, body, Map.of()));
  }

  @Test
  void theClaimsOfAnEarlierLifeAreDeliveredAtOnceAfterARestart() {
    String queue = OutboxDispatcherContract.QUEUE;
    // Given a first life that enqueued 20 entries and claimed 16 of them for 5 minutes, then died
    RocksDbDedupStore first = RocksDbDedupStore.builder(dir).timeSource(clock).build();
    DedupStoreOutbox<RocksDbDedupStore> filler = new DedupStoreOutbox<>(first, clock, () -> {});
    for (int i = 0; i < 20; i++) {
      filler.enqueue(queue, delivery("e" + i));
    }
    List<OutboxRecord> claimed =
        first.claim(queue, 16, clock.wallMillis(), Duration.ofMinutes(5).toMillis());
    assertThat(claimed).hasSize(16);
    first.close(); // as kill -9 leaves it: claimed, not settled

    // When the next life starts its dispatcher, the clock not having moved
    try (RocksDbDedupStore second = RocksDbDedupStore.builder(dir).timeSource(clock).build();
        OutboxDispatcher d =
            OutboxDispatcher.builder(queue, second, sink)
                .timeSource(clock)
                .claimTimeout(Duration.ofMinutes(5))
                .pollInterval(Duration.ofMillis(20))
                .start()) {

      // Then every entry is delivered, the 16 claimed ones included
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(10))
          .until(() -> second.depth(queue) == 0);
      assertThat(sink.delivered()).hasSize(20);
      assertThat(d.inFlight()).isZero();
    }
  }

  private static byte[] delivery(String key, String orderingKey) {
    byte[] body = ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    return DeliveryCodec.encode(
        new Delivery(OutboxDispatcherContract.QUEUE, key, orderingKey, body, Map.of()));
  }

  /**
   * Issue 11, {@code ordering.on_failure: block}: a key blocked by an event that failed for good
   * stays blocked across a restart (the store keeps it), and a retry in the next life delivers the
   * event, then the key's later one.
   */
  @Test
  void aBlockedKeyStaysBlockedAcrossARestartUntilRetried() {
    String queue = OutboxDispatcherContract.QUEUE;
    sink.script("a1", new DeliveryOutcome.Failed("HTTP 400: bad total", false));

    // Given a first life whose dispatcher blocked key A on a1 (a2 waits behind it)
    try (RocksDbDedupStore first = RocksDbDedupStore.builder(dir).timeSource(clock).build()) {
      DedupStoreOutbox<RocksDbDedupStore> filler = new DedupStoreOutbox<>(first, clock, () -> {});
      filler.enqueue(queue, delivery("a1", "A"), "A");
      filler.enqueue(queue, delivery("a2", "A"), "A");
      try (OutboxDispatcher d =
          OutboxDispatcher.builder(queue, first, sink)
              .timeSource(clock)
              .blockOnFailure(true)
              .pollInterval(Duration.ofMillis(20))
              .start()) {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> BlockedKeys.list(first, queue, DeliveryCodec::decode).size() == 1);
      }
    }

    // When the next life starts, an hour later, and another key's event comes in
    clock.advance(Duration.ofHours(1));
    try (RocksDbDedupStore second = RocksDbDedupStore.builder(dir).timeSource(clock).build();
        OutboxDispatcher d =
            OutboxDispatcher.builder(queue, second, sink)
                .timeSource(clock)
                .blockOnFailure(true)
                .pollInterval(Duration.ofMillis(20))
                .start()) {
      new DedupStoreOutbox<>(second, clock, () -> {}).enqueue(queue, delivery("b1", "B"), "B");
      d.wakeUp();
      await().atMost(Duration.ofSeconds(30)).until(() -> sink.delivered().contains("b1"));

      // Then key A is still blocked on a1
      List<BlockedKeys.Blocked> blocked = BlockedKeys.list(second, queue, DeliveryCodec::decode);
      assertThat(blocked)
          .singleElement()
          .satisfies(
              b -> {
                assertThat(b.orderingKey()).isEqualTo("A");
                assertThat(b.lastError()).isEqualTo("HTTP 400: bad total");
              });
      assertThat(sink.attempts()).containsExactly("a1", "b1");

      // And a retry delivers a1, then a2
      BlockedKeys.retry(second, queue, blocked.get(0), clock.wallMillis());
      d.wakeUp();
      await().atMost(Duration.ofSeconds(30)).until(() -> second.depth(queue) == 0);
      assertThat(sink.delivered()).containsExactly("b1", "a1", "a2");
      assertThat(second.deadLetters(queue, 10)).isEmpty();
    }
  }
}
