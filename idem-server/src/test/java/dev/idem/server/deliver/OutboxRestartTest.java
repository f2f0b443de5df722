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
}
