package dev.idem.kafka.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Reservation;
import dev.idem.Scope;
import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.key.KeyEncoding;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How long a new owner takes to restore one partition from its changelog. Writes {@code
 * idem.kstate.restoreKeys} keys (default 20,000; {@code -Psoak}: 1,000,000) through reserve +
 * commit, so the changelog holds two records per key as the live path writes them (before
 * compaction: the worst case), then restores them in a fresh state and prints the time. It asserts
 * what was restored, never how fast: the figure is for docs/BENCHMARKS.md, taken on a quiet
 * machine.
 *
 * <pre>
 * ./mvnw -B -pl idem-kafka -am verify -Psoak -Dtest=RestoreTimeTest -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 */
class RestoreTimeTest {
  @TempDir Path dir;

  @Test
  void restoresEveryCommittedKeyOfAPartition() throws Exception {
    int keys = Integer.getInteger("idem.kstate.restoreKeys", 20_000);
    Scope scope = Scope.of("kstate-restore");
    try (KafkaBroker kafka = KafkaBroker.start()) {
      String topic = KafkaBroker.uniqueTopic("restore");
      kafka.createTopic(topic, 1);
      List<TopicPartition> p0 = List.of(new TopicPartition(topic, 0));
      Map<String, Object> clients = Map.of("bootstrap.servers", kafka.bootstrapServers());

      long writeStart = System.nanoTime();
      try (PartitionedDedupState writer =
              PartitionedDedupState.open(
                  PartitionedStateConfig.builder(topic, dir.resolve("w"), clients)
                      .replicationFactor(1)
                      .build());
          KafkaConsumer<String, String> c = restored(kafka, writer, p0)) {
        Deduplicator d = Deduplicator.builder(writer.store(0), scope).build();
        for (int from = 0; from < keys; from += 1000) {
          List<DedupKey> batch = new ArrayList<>();
          for (int i = from; i < Math.min(keys, from + 1000); i++) {
            batch.add(KeyEncoding.ofString("key-" + i));
          }
          List<Reservation> held = new ArrayList<>();
          for (Decision decision : d.reserveAll(batch)) {
            held.add(((Decision.Acquired) decision).reservation());
          }
          d.commitAll(held);
        }
        writer.flush();
      }
      double writeSeconds = (System.nanoTime() - writeStart) / 1e9;

      try (PartitionedDedupState reader =
              PartitionedDedupState.open(
                  PartitionedStateConfig.builder(topic, dir.resolve("r"), clients)
                      .replicationFactor(1)
                      .build());
          KafkaConsumer<String, String> c = restored(kafka, reader, p0)) {
        PartitionedDedupState.RestoreStats s = reader.restores().get(0);
        assertThat(s.entries()).isEqualTo(keys);
        double seconds = s.duration().toNanos() / 1e9;
        System.out.printf(
            "restore: %,d keys, %,d changelog records, %.2f s (%.1f s per million keys, %,.0f"
                + " records/s); writing them took %.2f s%n",
            keys, s.records(), seconds, seconds * 1e6 / keys, s.records() / seconds, writeSeconds);
      }
    }
  }

  private static KafkaConsumer<String, String> restored(
      KafkaBroker kafka, PartitionedDedupState state, List<TopicPartition> partitions) {
    KafkaConsumer<String, String> c = kafka.consumer(KafkaBroker.uniqueTopic("g"));
    c.assign(partitions);
    state.rebalanceListener(c).onPartitionsAssigned(partitions);
    await()
        .atMost(Duration.ofMinutes(10))
        .pollInterval(Duration.ofMillis(1))
        .until(
            () -> {
              state.restoreSome(c, Duration.ofMillis(200));
              return !state.isRestoring();
            });
    return c;
  }

  static void close(KafkaConsumer<?, ?> c) {
    c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
  }
}
