package dev.idem.server.source.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code idem serve} (the shaded jar, a child JVM) consuming a RabbitMQ queue on RocksDB with sync
 * delivery to a file, killed with SIGKILL mid-run and started again: every message is acted on
 * downstream, duplicates of the publisher never reach it, and nothing is left unacknowledged. The
 * one repetition the docs allow: a message delivered but not yet committed and acked when the
 * process died is delivered again after the restart, with the same Idempotency-Key; so the file may
 * hold a key twice, at most once per message in hand at the kill (consumers x prefetch).
 *
 * <p>2,000 messages by default; {@code -Psoak} (or {@code -Didem.rabbitmq.kill.messages=10000}) for
 * the 10,000.
 */
class RabbitMqKillIT {
  private static final int MESSAGES = Integer.getInteger("idem.rabbitmq.kill.messages", 2_000);
  private static final int CONSUMERS = 2;
  private static final int PREFETCH = 20;

  /** The bound on each wait: a minute plus room for the run's size. */
  private static final Duration WAIT = Duration.ofSeconds(60 + MESSAGES / 25);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path JAR = Path.of(System.getProperty("idem.jar", "target/idem.jar"));

  @TempDir Path dir;

  @Test
  void aSigkillMidRunLosesNothingDeliversNoPublisherDuplicateAndLeavesNothingUnacked()
      throws Exception {
    assertThat(JAR).as("the shaded jar, built in the package phase").exists();
    try (TestBroker broker = TestBroker.require()) {
      // Given a queue with 30% duplicates (same message_id) among its messages
      String[] q = broker.queueWithDeadLetters("kill");
      Random random = new Random(7);
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < MESSAGES; i++) {
        ids.add(
            ids.size() < 50 || random.nextInt(10) >= 3
                ? "k-" + i
                : ids.get(random.nextInt(ids.size())));
      }
      for (String id : ids) {
        broker.publish(q[0], id, "{\"id\":\"" + id + "\"}");
      }
      broker.confirm();
      Set<String> distinct = new HashSet<>(ids);
      Files.writeString(
          dir.resolve("idem.yaml"),
          """
          server: { host: 127.0.0.1, port: %d, shutdown_timeout: 5s }
          store: { type: rocksdb, path: ./data }
          pipelines:
            - id: kill
              source:
                rabbitmq: { uri: "%s", queue: %s, prefetch: %d, consumers: %d, requeue_delay: 50ms }
              dedup: { window: 1h }
              deliver: { mode: sync, file: { path: ./delivered.jsonl } }
          """
              .formatted(freePort(), broker.uri, q[0], PREFETCH, CONSUMERS));
      Path delivered = dir.resolve("delivered.jsonl");

      // When the service is killed with SIGKILL once about a third is delivered, and restarted
      Process service = start(0);
      try {
        await().atMost(WAIT).until(() -> lines(delivered).size() >= distinct.size() / 3);
        service.destroyForcibly();
        assertThat(service.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(service.exitValue()).as("a SIGKILL").isEqualTo(137);
        int atKill = lines(delivered).size();
        assertThat(atKill).as("killed mid-run").isLessThan(distinct.size());
        service = start(1);
        await()
            .atMost(WAIT.plusSeconds(30))
            .until(() -> new HashSet<>(lines(delivered)).size() == distinct.size());
        await().atMost(Duration.ofSeconds(30)).until(() -> broker.ready(q[0]) == 0);
      } finally {
        service.destroy();
        service.waitFor(30, TimeUnit.SECONDS);
        if (service.isAlive()) {
          service.destroyForcibly();
        }
      }

      // Then every message was acted on, a key twice only for what was in hand at the kill
      List<String> keys = lines(delivered);
      Set<String> unique = new HashSet<>(keys);
      assertThat(unique).hasSize(distinct.size());
      assertThat(keys.size() - unique.size())
          .as("repeated keys, allowed only for messages in hand at the kill")
          .isLessThanOrEqualTo(CONSUMERS * PREFETCH);
      assertThat(broker.ready(q[0])).as("nothing left in the queue or unacknowledged").isZero();
      assertThat(broker.ready(q[1])).as("nothing dead-lettered").isZero();
    }
  }

  /** The idempotency keys in the file, one per complete line. */
  private static List<String> lines(Path file) throws IOException {
    if (!Files.exists(file)) {
      return List.of();
    }
    String text = Files.readString(file, StandardCharsets.UTF_8);
    List<String> keys = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || !line.endsWith("}")) {
        continue; // a line cut by the kill
      }
      try {
        keys.add(JSON.readTree(line).get("idempotency_key").asText());
      } catch (IOException e) {
        // a line cut by the kill
      }
    }
    return keys;
  }

  private Process start(int life) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    return new ProcessBuilder(
            java,
            "-Xmx256m",
            "-jar",
            JAR.toAbsolutePath().toString(),
            "serve",
            "--config",
            "idem.yaml")
        .directory(dir.toFile())
        .redirectOutput(dir.resolve("stdout-" + life + ".txt").toFile())
        .redirectError(dir.resolve("stderr-" + life + ".txt").toFile())
        .start();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
