package dev.idem.kafka.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.kafka.testing.KafkaBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three consumers of one group on Kafka-partitioned state against a real broker: one in a child
 * JVM, killed with SIGKILL mid-run; the two others take over its partitions, restore them from the
 * changelog and go on. 30% of the records are duplicates, and the duplicates produced after the
 * kill include keys the killed consumer made durable. Every key is acted on; a key is acted on a
 * second time only if the killed consumer acted on it without its batch becoming durable (at least
 * once), never past a durable key commit.
 */
class PartitionedStateFailoverTest {
  private static KafkaBroker kafka;

  @TempDir Path dir;

  @BeforeAll
  static void broker() throws Exception {
    kafka = KafkaBroker.start();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    kafka.close();
  }

  @Test
  void aKilledConsumersPartitionsAreRestoredAndNoDurableKeyIsActedOnAgain() throws Exception {
    String topic = KafkaBroker.uniqueTopic("kstate");
    String group = KafkaBroker.uniqueTopic("kstate-group");
    kafka.createTopic(topic, 6);
    Random random = new Random(16);
    List<String> all = new ArrayList<>();
    List<String> phase1 = records(0, 700, all, all, random);
    produce(topic, phase1);

    Path killedSink = dir.resolve("killed.sink");
    Files.createFile(killedSink);
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                StateWorker.class.getName(),
                kafka.bootstrapServers(),
                topic,
                group,
                dir.resolve("killed-state").toString(),
                killedSink.toString(),
                "20") // slower than the survivors, so that it still has records when killed
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("killed.log").toFile())
            .start();
    List<Thread> threads = new ArrayList<>();
    List<StateWorker> survivors = new ArrayList<>();
    AtomicBoolean running = new AtomicBoolean(true);
    try {
      // The child alone owns every partition first; the survivors join once it is acting.
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> lines(killedSink, "D ").size() >= 50 || !child.isAlive());
      assertThat(child.isAlive()).as("child JVM, see killed.log").isTrue();
      for (String name : List.of("a", "b")) {
        Path sink = dir.resolve(name + ".sink");
        Files.createFile(sink);
        StateWorker w =
            new StateWorker(
                kafka.bootstrapServers(), topic, group, dir.resolve(name + "-state"), sink, 5);
        survivors.add(w);
        Thread t =
            new Thread(
                () -> {
                  while (running.get()) {
                    w.pollOnce();
                  }
                },
                "worker-" + name);
        threads.add(t);
        t.start();
      }
      // Kill it mid-run, after the survivors joined (a rebalance) and it acted on more records.
      int[] before = {Integer.MAX_VALUE};
      await()
          .atMost(Duration.ofSeconds(90))
          .until(
              () -> {
                int acted = lines(killedSink, "A ").size();
                if (before[0] == Integer.MAX_VALUE
                    && !lines(dir.resolve("a.sink"), "A ").isEmpty()
                    && !lines(dir.resolve("b.sink"), "A ").isEmpty()) {
                  before[0] = acted; // the survivors have partitions: a rebalance happened
                }
                return acted > before[0] + 10 || !child.isAlive();
              });
      assertThat(child.isAlive()).as("child JVM alive until killed, see killed.log").isTrue();
      child.destroyForcibly(); // SIGKILL on Linux
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();

      Set<String> durableByKilled = new HashSet<>(lines(killedSink, "D "));
      assertThat(durableByKilled).isNotEmpty();
      // Phase 2: new keys, and duplicates of keys the killed consumer made durable.
      List<String> phase2 = records(700, 700, all, new ArrayList<>(durableByKilled), random);
      produce(topic, phase2);

      Set<String> unique = new HashSet<>(all);
      assertThat(unique).hasSize(1400);
      await().atMost(Duration.ofSeconds(45)).until(() -> actedKeys(killedSink).containsAll(unique));
    } finally {
      running.set(false);
      for (Thread t : threads) {
        t.join(10_000);
      }
      for (StateWorker w : survivors) {
        w.close();
      }
      child.destroyForcibly();
    }

    Map<String, Integer> acts = new HashMap<>();
    for (Path sink : List.of(killedSink, dir.resolve("a.sink"), dir.resolve("b.sink"))) {
      for (String key : lines(sink, "A ")) {
        acts.merge(key, 1, Integer::sum);
      }
    }
    Set<String> actedByKilled = new HashSet<>(lines(killedSink, "A "));
    Set<String> durableByKilled = new HashSet<>(lines(killedSink, "D "));
    assertThat(acts.keySet()).containsExactlyInAnyOrderElementsOf(new HashSet<>(all));
    List<String> twice = new ArrayList<>();
    acts.forEach(
        (key, n) -> {
          if (n > 1) {
            twice.add(key);
            assertThat(n).as("acts on " + key).isEqualTo(2);
            assertThat(actedByKilled).as(key + " acted on twice").contains(key);
            assertThat(durableByKilled)
                .as(key + " acted on past a durable commit")
                .doesNotContain(key);
          }
        });
    for (String key : durableByKilled) {
      assertThat(acts.get(key)).as("durable key " + key).isEqualTo(1);
    }
    // The survivors restored partitions from the changelog, with the killed consumer's keys.
    long restoredRecords =
        survivors.stream()
            .flatMap(w -> w.state().restores().stream())
            .mapToLong(PartitionedDedupState.RestoreStats::records)
            .sum();
    assertThat(restoredRecords).isGreaterThan(0);
    System.out.println(
        "failover: "
            + acts.size()
            + " keys, "
            + durableByKilled.size()
            + " durable at the killed consumer, "
            + twice.size()
            + " acted on again (not durable when killed), "
            + restoredRecords
            + " changelog records restored by the survivors");
  }

  /** n new keys from {@code first}, plus 30% duplicates (of the total) drawn from {@code dups}. */
  private static List<String> records(
      int first, int n, List<String> all, List<String> dups, Random random) {
    List<String> out = new ArrayList<>();
    for (int i = first; i < first + n; i++) {
      String key = String.format("k-%05d", i);
      out.add(key);
      all.add(key);
      if (i % 7 < 3) { // 3 duplicates per 7 new keys: 30% of the records
        List<String> pool = dups.isEmpty() ? out : dups;
        out.add(pool.get(random.nextInt(pool.size())));
      }
    }
    return out;
  }

  private static void produce(String topic, List<String> keys) {
    try (KafkaProducer<String, String> p = kafka.producer()) {
      for (String key : keys) {
        p.send(new ProducerRecord<>(topic, key, "v"));
      }
      p.flush();
    }
  }

  private Set<String> actedKeys(Path killedSink) throws IOException {
    Set<String> keys = new HashSet<>(lines(killedSink, "A "));
    keys.addAll(lines(dir.resolve("a.sink"), "A "));
    keys.addAll(lines(dir.resolve("b.sink"), "A "));
    return keys;
  }

  private static List<String> lines(Path sink, String prefix) throws IOException {
    if (!Files.exists(sink)) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(sink, StandardCharsets.UTF_8)) {
      if (line.startsWith(prefix)) {
        out.add(line.substring(prefix.length()));
      }
    }
    return out;
  }
}
