package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.server.deliver.DeliveryCodec;
import dev.idem.server.support.Http;
import dev.idem.spi.OutboxRecord;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12's kill-9 storm at the service level: {@code idem serve} on RocksDB (group commit) with
 * async delivery to a file, 8 senders that retry every event until it is accepted and resend 30% of
 * the accepted ones, and the service's JVM killed with SIGKILL 2 s after each start and started
 * again on the same directory. At the end every event was accepted; none is lost (each accepted
 * event is in the file or still in the outbox); no event is delivered twice within one life of the
 * process (the docs allow a line twice only across a crash); no resend of an accepted event is
 * accepted again (a lost commit); and no request is answered {@code 409} (each event has one
 * sender, so a {@code 409} could only come from a reservation that outlived its holder's process).
 *
 * <p>The default build kills twice; {@code -Psoak} raises it ({@code idem.storm.kills}).
 */
class RocksDbKillStormIT {
  private static final int KILLS = Integer.getInteger("idem.storm.kills", 2);
  private static final int SENDERS = 8;
  private static final int EVENTS_AFTER_LAST_KILL = 25;
  private static final Duration LIFE = Duration.ofSeconds(2);
  private static final Duration GIVE_UP = Duration.ofSeconds(90);
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void aKill9StormEndsWithEveryEventAcceptedNoneLostNoneTwiceInOneLifeAndNo409() throws Exception {
    assertThat(LauncherIT.JAR).as("the shaded jar, built in the package phase").exists();
    int port = freePort();
    Files.writeString(
        dir.resolve("idem.yaml"),
        """
        server: { host: 127.0.0.1, port: %d, shutdown_timeout: 5s }
        store: { type: rocksdb, path: ./data, durability: group-commit }
        pipelines:
          - id: storm
            source: { webhook: { path: /hooks/storm } }
            dedup: { key: source.id, lease: 5m }
            deliver: { mode: async, file: { path: ./delivered.jsonl } }
        """
            .formatted(port));
    Http http = new Http(URI.create("http://127.0.0.1:" + port));
    Path delivered = dir.resolve("delivered.jsonl");
    Storm storm = new Storm(http);

    // given: the service, and 8 senders posting to it
    Process service = start(0);
    LauncherIT.awaitUp(http, service);
    ExecutorService pool = Executors.newFixedThreadPool(SENDERS);
    List<Future<?>> senders = new ArrayList<>();
    List<Long> lifeEnds = new ArrayList<>();
    try {
      for (int s = 0; s < SENDERS; s++) {
        int sender = s;
        senders.add(pool.submit(() -> storm.send(sender)));
      }

      // when: the service is killed with SIGKILL 2 s into each life, and started again
      for (int kill = 1; kill <= KILLS; kill++) {
        int acceptedBefore = storm.accepted.size();
        Thread.sleep(LIFE.toMillis()); // the storm's schedule, not a wait for a condition
        assertThat(storm.accepted.size())
            .as("events accepted during life %d (the kill must hit a working service)", kill)
            .isGreaterThan(acceptedBefore);
        service.destroyForcibly();
        assertThat(service.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(service.exitValue()).as("a SIGKILL").isEqualTo(137);
        lifeEnds.add(Files.exists(delivered) ? Files.size(delivered) : 0L);
        service = start(kill);
        LauncherIT.awaitUp(http, service);
      }
      storm.killsDone.set(true);
      for (Future<?> f : senders) {
        f.get(GIVE_UP.toSeconds() * 2, TimeUnit.SECONDS);
      }
    } finally {
      storm.killsDone.set(true);
      pool.shutdownNow();
      service.destroy();
      assertThat(service.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }

    // then
    assertThat(storm.problems)
        .as("answers the storm must never get (%d retries in all)", storm.retries.get())
        .isEmpty();
    assertThat(storm.accepted).hasSize(storm.sent.size());
    Map<String, List<Integer>> livesById = deliveredLives(delivered, lifeEnds);
    Set<String> pending = outboxIds();
    List<String> lost = new ArrayList<>();
    for (String id : storm.accepted.keySet()) {
      if (!livesById.containsKey(id) && !pending.contains(id)) {
        lost.add(id);
      }
    }
    assertThat(lost).as("accepted events neither delivered nor in the outbox").isEmpty();
    List<String> twiceInOneLife = new ArrayList<>();
    livesById.forEach(
        (id, lives) -> {
          if (new HashSet<>(lives).size() != lives.size()) {
            twiceInOneLife.add(id + " in lives " + lives);
          }
        });
    assertThat(twiceInOneLife).as("events delivered twice by one process").isEmpty();
    assertThat(storm.sent).containsAll(livesById.keySet());
  }

  /** The senders and what they saw. */
  private static final class Storm {
    final Http http;
    final AtomicBoolean killsDone = new AtomicBoolean();
    final Set<String> sent = ConcurrentHashMap.newKeySet();
    final Map<String, Integer> accepted = new ConcurrentHashMap<>();

    /** Distinct problems (a key answered 409 a hundred times is one problem). */
    final Set<String> problems = ConcurrentHashMap.newKeySet();

    final AtomicLong retries = new AtomicLong();

    Storm(Http http) {
      this.http = http;
    }

    /** Sends fresh events until the kills are over and a few more after; resends 30%. */
    void send(int sender) {
      SplittableRandom random = new SplittableRandom(sender);
      int afterLastKill = 0;
      for (int n = 0; afterLastKill < EVENTS_AFTER_LAST_KILL; n++) {
        if (killsDone.get()) {
          afterLastKill++;
        }
        String id = "s" + sender + "-" + n;
        String body = "{\"id\":\"" + id + "\",\"sender\":" + sender + ",\"n\":" + n + "}";
        sent.add(id);
        int first = untilAnswered(id, body);
        if (first < 0) {
          return;
        }
        accepted.put(id, first);
        if (random.nextInt(10) < 3) {
          int again = untilAnswered(id, body);
          if (again == 202) {
            problems.add(id + ": accepted as new again after its accept was answered " + first);
          }
        }
      }
    }

    /** Posts until the answer is 202 or 200 and returns it; -1 if it never came. */
    int untilAnswered(String id, String body) {
      long giveUpAt = System.nanoTime() + GIVE_UP.toNanos();
      while (System.nanoTime() < giveUpAt) {
        try {
          HttpResponse<String> r = http.post("/hooks/storm", body);
          int status = r.statusCode();
          if (status == 202 || status == 200) {
            return status;
          }
          if (status == 409) {
            problems.add(id + ": answered 409 (in flight), though only its sender sends it");
          } else if (status != 503) {
            problems.add(id + ": " + status + " " + r.body());
          }
        } catch (UncheckedIOException e) {
          // The service is down (killed, or starting): retry, as a sender does.
        }
        retries.incrementAndGet();
        try {
          Thread.sleep(20); // a sender's retry pause
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          problems.add(id + ": interrupted");
          return -1;
        }
      }
      problems.add(id + ": not accepted within " + GIVE_UP);
      return -1;
    }
  }

  /** Event id to the lives (0 = first process) whose deliveries wrote a line of it. */
  private static Map<String, List<Integer>> deliveredLives(Path file, List<Long> lifeEnds)
      throws IOException {
    Map<String, List<Integer>> out = new HashMap<>();
    if (!Files.exists(file)) {
      return out;
    }
    byte[] all = Files.readAllBytes(file);
    int start = 0;
    for (int i = 0; i < all.length; i++) {
      if (all[i] != '\n') {
        continue;
      }
      String line = new String(all, start, i - start, StandardCharsets.UTF_8);
      int life = 0;
      while (life < lifeEnds.size() && start >= lifeEnds.get(life)) {
        life++;
      }
      JsonNode event = JSON.readTree(line).path("event");
      assertThat(event.path("id").isTextual()).as("a delivered line: %s", line).isTrue();
      out.computeIfAbsent(event.path("id").asText(), k -> new ArrayList<>()).add(life);
      start = i + 1;
    }
    assertThat(start).as("the file ends with a whole line").isEqualTo(all.length);
    return out;
  }

  /** The ids of the events still in the outbox (pending, or claimed by a killed process). */
  private Set<String> outboxIds() throws IOException {
    Set<String> ids = new HashSet<>();
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir.resolve("data")).sweepInterval(Duration.ZERO).build()) {
      // Far in the future, every entry is due, claimed or not.
      long future = System.currentTimeMillis() + Duration.ofDays(1).toMillis();
      for (OutboxRecord r : store.claim("storm", 1_000_000, future, 1)) {
        byte[] body = DeliveryCodec.decode(r.payload()).body();
        ids.add(JSON.readTree(body).path("id").asText());
      }
    }
    return ids;
  }

  private Process start(int life) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    return new ProcessBuilder(
            java,
            "-Xmx256m",
            "-jar",
            LauncherIT.JAR.toAbsolutePath().toString(),
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
