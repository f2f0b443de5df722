package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 11, sequence mode ({@code ordering.sequence}): two service instances in this JVM share one
 * Redis (a redis-server this test starts); each key's versions arrive shuffled at random instances,
 * and downstream sees them ascending; older ones are dropped as stale (also after a restart, since
 * the last sequence is in the store); a gap that never fills is released after {@code gap_timeout}.
 */
class SequenceModeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int KEYS = 6;
  private static final int VERSIONS = 8;

  static Process redis;
  static int redisPort;
  static Receiver receiver;
  static final List<IdemServer> servers = new ArrayList<>();
  static final List<Http> http = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    boolean installed = installed("redis-server");
    if (!installed && "true".equals(System.getenv("CI"))) {
      throw new AssertionError("redis-server is not installed; install it (apt-get install redis)");
    }
    assumeTrue(installed, "SKIPPED: redis-server is not installed; install it to run this test");
    redisPort = freePort();
    redis =
        new ProcessBuilder(
                "redis-server",
                "--port",
                Integer.toString(redisPort),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    awaitPort(redisPort);
    receiver = new Receiver();
    servers.add(startInstance());
    servers.add(startInstance());
    for (IdemServer s : servers) {
      http.add(new Http(s.uri()));
    }
  }

  static IdemServer startInstance() {
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: redis, url: "redis://127.0.0.1:%d", prefix: "seq:" }
        pipelines:
          - id: versions
            source: { webhook: { path: /hooks/versions } }
            dedup: { key: id, lease: 5s }
            ordering: { key: entity, lock_ttl: 5s, sequence: body.version, gap_timeout: 20s }
            deliver: { retries: 1, backoff: 10ms, http: { url: "%s" } }
          - id: gaps
            source: { webhook: { path: /hooks/gaps } }
            dedup: { key: id }
            ordering: { key: entity, sequence: version, gap_timeout: 300ms }
            deliver: { http: { url: "%s" } }
        """
            .formatted(redisPort, receiver.uri("/versions"), receiver.uri("/gaps"));
    IdemConfig config = ConfigLoader.parse("sequence.yaml", yaml, n -> null);
    return IdemServer.start(
        config.server(), ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
  }

  @AfterAll
  static void stop() {
    for (IdemServer s : servers) {
      s.close();
    }
    if (receiver != null) {
      receiver.close();
    }
    if (redis != null) {
      redis.destroyForcibly();
    }
  }

  static String event(String id, String entity, long version) {
    return "{\"id\":\"%s\",\"entity\":\"%s\",\"version\":%d}".formatted(id, entity, version);
  }

  @Test
  void shuffledVersionsAtRandomInstancesReachDownstreamAscendingAndOlderOnesAreStale()
      throws Exception {
    Random random = new Random(11);
    // Each key's first version is sent first: a key's first event ever is taken as it comes.
    for (int k = 0; k < KEYS; k++) {
      assertThat(
              http.get(k % 2)
                  .post("/hooks/versions", event("e" + k + "-0", "k" + k, 0))
                  .statusCode())
          .isEqualTo(202);
    }
    List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
    List<String[]> all = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      for (int v = 1; v <= VERSIONS; v++) {
        all.add(new String[] {"k" + k, Integer.toString(v)});
      }
    }
    Collections.shuffle(all, random);
    for (String[] e : all) {
      Http to = http.get(random.nextInt(http.size()));
      sent.add(
          to.postAsync("/hooks/versions", event(e[0] + "-" + e[1], e[0], Long.parseLong(e[1]))));
    }
    for (CompletableFuture<HttpResponse<String>> f : sent) {
      assertThat(f.get().statusCode()).as(f.get().body()).isEqualTo(202);
    }

    Map<String, List<Long>> seen = new LinkedHashMap<>();
    for (Receiver.Received r : receiver.received()) {
      if (r.path().equals("/versions")) {
        JsonNode n = JSON.readTree(r.body());
        seen.computeIfAbsent(n.get("entity").asText(), x -> new ArrayList<>())
            .add(n.get("version").asLong());
      }
    }
    assertThat(seen).hasSize(KEYS);
    List<Long> expected = new ArrayList<>();
    for (long v = 0; v <= VERSIONS; v++) {
      expected.add(v);
    }
    for (Map.Entry<String, List<Long>> e : seen.entrySet()) {
      assertThat(e.getValue()).as("versions of %s downstream", e.getKey()).isEqualTo(expected);
    }

    // An older version under a new event id is stale: answered like a duplicate, not delivered.
    int before = receiver.received().size();
    HttpResponse<String> stale = http.get(1).post("/hooks/versions", event("late-3", "k0", 3));
    HttpResponse<String> same = http.get(0).post("/hooks/versions", event("again-8", "k1", 8));
    assertThat(stale.statusCode()).isEqualTo(200);
    assertThat(stale.body()).isEqualTo("{\"accepted\":true,\"duplicate\":true,\"stale\":true}");
    assertThat(same.statusCode()).isEqualTo(200);
    assertThat(same.body()).contains("\"stale\":true");
    // Its key was committed: a resend is a plain duplicate.
    assertThat(http.get(0).post("/hooks/versions", event("late-3", "k0", 3)).body())
        .isEqualTo("{\"accepted\":true,\"duplicate\":true}");
    assertThat(receiver.received()).hasSize(before);
    assertThat(
            servers
                    .get(0)
                    .runtime()
                    .metrics()
                    .registry()
                    .counter("idem_ordering_stale", "pipeline", "versions")
                    .count()
                + servers
                    .get(1)
                    .runtime()
                    .metrics()
                    .registry()
                    .counter("idem_ordering_stale", "pipeline", "versions")
                    .count())
        .isEqualTo(2.0);

    // The last sequence is in the store: a new instance (a restart) still knows it.
    IdemServer fresh = startInstance();
    try {
      Http h = new Http(fresh.uri());
      assertThat(h.post("/hooks/versions", event("after-restart", "k2", 7)).body())
          .contains("\"stale\":true");
      assertThat(h.post("/hooks/versions", event("next", "k2", VERSIONS + 1)).statusCode())
          .isEqualTo(202);
    } finally {
      fresh.close();
    }
  }

  @Test
  void aGapThatNeverFillsIsReleasedAfterGapTimeoutAndTheMissingVersionIsThenStale() {
    assertThat(http.get(0).post("/hooks/gaps", event("g-1", "gap", 1)).statusCode()).isEqualTo(202);
    // Version 2 never comes: 3 waits gap_timeout (300 ms), then is processed.
    assertThat(http.get(1).post("/hooks/gaps", event("g-3", "gap", 3)).statusCode()).isEqualTo(202);
    assertThat(http.get(0).post("/hooks/gaps", event("g-2", "gap", 2)).body())
        .contains("\"stale\":true");
    assertThat(receiver.received())
        .filteredOn(r -> r.path().equals("/gaps") && r.body().contains("\"gap\""))
        .extracting(r -> r.body().replaceAll(".*\"version\":(\\d+).*", "$1"))
        .containsExactly("1", "3");
    double released = 0;
    for (IdemServer s : servers) {
      released +=
          s.runtime()
              .metrics()
              .registry()
              .counter("idem_ordering_gap_released", "pipeline", "gaps")
              .count();
    }
    assertThat(released).isEqualTo(1.0);
  }

  @Test
  void anEventWithoutAnIntegerSequenceIsRefusedSayingWhatToSend() {
    HttpResponse<String> missing =
        http.get(0).post("/hooks/gaps", "{\"id\":\"nv\",\"entity\":\"x\"}");
    HttpResponse<String> text =
        http.get(0).post("/hooks/gaps", "{\"id\":\"tv\",\"entity\":\"x\",\"version\":\"v2\"}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.body()).contains("invalid_sequence").contains("version");
    assertThat(text.statusCode()).isEqualTo(400);
    assertThat(text.body()).contains("must be an integer");
  }

  private static void awaitPort(int port) throws Exception {
    for (int i = 0; i < 200; i++) {
      try (Socket s = new Socket("127.0.0.1", port)) {
        return;
      } catch (IOException e) {
        Thread.sleep(25);
      }
    }
    throw new AssertionError("redis-server did not start on port " + port);
  }

  private static boolean installed(String command) {
    try {
      return new ProcessBuilder("sh", "-c", "command -v " + command).start().waitFor() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
