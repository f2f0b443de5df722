package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The service assembled from YAML with the real stores (memory, RocksDB). */
class ServiceAssemblyTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  IdemConfig config(String yaml) {
    return ConfigLoader.parse("t.yaml", yaml, name -> null);
  }

  /**
   * A service on a RocksDB store under {@code dir/data} ({@code storeOptions} appended) with one
   * webhook pipeline, {@code orders}, deduplicated by {@code source.id}, delivering to stdout.
   */
  IdemConfig rocksDbOrders(String storeOptions) {
    return config(
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: rocksdb, path: %s%s }
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
        """
            .formatted(dir.resolve("data"), storeOptions));
  }

  @Test
  void aRocksDbServiceRestartedOnTheSameDirectoryStillAnswersDuplicates() {
    IdemConfig c = rocksDbOrders("");
    ServerSettings s = c.server();

    // given an event accepted before a restart
    TestEdge before = new TestEdge();
    try (IdemServer server =
        IdemServer.start(s, ServiceAssembly.assemble(c, before, TimeSource.system()))) {
      assertThat(new Http(server.uri()).post("/hooks/orders", "{\"id\":\"r-1\"}").statusCode())
          .isEqualTo(202);
    }

    // when the service is started again on the same directory and the event is resent
    TestEdge after = new TestEdge();
    HttpResponse<String> again;
    HttpResponse<String> fresh;
    try (IdemServer server =
        IdemServer.start(s, ServiceAssembly.assemble(c, after, TimeSource.system()))) {
      Http http = new Http(server.uri());
      again = http.post("/hooks/orders", "{\"id\":\"r-1\"}");
      fresh = http.post("/hooks/orders", "{\"id\":\"r-2\"}");
    }

    // then it is still a duplicate and is not delivered again
    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(fresh.statusCode()).isEqualTo(202);
    assertThat(before.sinks.get("orders").delivered()).hasSize(1);
    assertThat(after.sinks.get("orders").bodies()).containsExactly("{\"id\":\"r-2\"}");
  }

  @Test
  void concurrentWebhooksOnRocksDbGroupCommitAreAnsweredOnceTheirCommitsAreDurable()
      throws Exception {
    IdemConfig c = rocksDbOrders(", durability: group-commit");
    TestEdge edge = new TestEdge();
    int senders = 8;
    int each = 25;
    java.util.List<Integer> firsts = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.List<Integer> resends = new java.util.concurrent.CopyOnWriteArrayList<>();
    // given a service whose webhook answers new events from the group commit's completion
    try (IdemServer server =
        IdemServer.start(c.server(), ServiceAssembly.assemble(c, edge, TimeSource.system()))) {
      java.util.concurrent.ExecutorService pool =
          java.util.concurrent.Executors.newFixedThreadPool(senders);
      try {
        // when many senders post new events at once, each then resending its event
        java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
        for (int t = 0; t < senders; t++) {
          int sender = t;
          done.add(
              pool.submit(
                  () -> {
                    Http http = new Http(server.uri());
                    for (int i = 0; i < each; i++) {
                      String body = "{\"id\":\"c-" + sender + "-" + i + "\"}";
                      firsts.add(http.post("/hooks/orders", body).statusCode());
                      resends.add(http.post("/hooks/orders", body).statusCode());
                    }
                  }));
        }
        for (java.util.concurrent.Future<?> f : done) {
          f.get(60, java.util.concurrent.TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
    }

    // then every first delivery is accepted, every resend (after its answer) is a duplicate, and
    // each event was delivered once
    assertThat(firsts).hasSize(senders * each).containsOnly(202);
    assertThat(resends).hasSize(senders * each).containsOnly(200);
    assertThat(edge.sinks.get("orders").delivered()).hasSize(senders * each);
  }

  @Test
  void aMemoryStoreBoundsEachPipelineByItsMaxKeys() {
    IdemConfig c =
        config(
            """
            server: { host: 127.0.0.1, port: 0 }
            store: { type: memory, max_keys: 1000 }
            pipelines:
              - id: tiny
                source: { webhook: { path: /tiny } }
                dedup: { key: source.id, max_keys: 2 }
                deliver: { stdout: {} }
            """);
    TestEdge edge = new TestEdge();
    try (IdemServer server =
        IdemServer.start(c.server(), ServiceAssembly.assemble(c, edge, TimeSource.system()))) {
      Http http = new Http(server.uri());
      // given three keys through a bound of two (least recently used goes first)
      http.post("/tiny", "{\"id\":\"k1\"}");
      http.post("/tiny", "{\"id\":\"k2\"}");
      http.post("/tiny", "{\"id\":\"k3\"}");

      // then the oldest passes as new again, the newest is still a duplicate
      assertThat(http.post("/tiny", "{\"id\":\"k3\"}").statusCode()).isEqualTo(200);
      assertThat(http.post("/tiny", "{\"id\":\"k1\"}").statusCode()).isEqualTo(202);
      assertThat(http.get("/metrics").body())
          .contains("idem_decisions_total{decision=\"evicted\",pipeline=\"tiny\"}");
    }
  }

  @Test
  void aStoreThatCannotBeOpenedNamesTheStoreAndClosesWhatWasOpened() throws Exception {
    java.nio.file.Files.writeString(dir.resolve("not-a-dir"), "x");
    IdemConfig c =
        config(
            """
            store: { type: rocksdb, path: %s }
            pipelines:
              - id: p
                source: { webhook: { path: /p } }
                dedup: {}
                deliver: { stdout: {} }
            """
                .formatted(dir.resolve("not-a-dir")));

    assertThatThrownBy(() -> ServiceAssembly.assemble(c, new TestEdge(), TimeSource.system()))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("rocksdb:" + dir.resolve("not-a-dir"));
  }

  @Test
  void theServiceClockReservesOnTheSystemClockNotOnTheCoarseOne() {
    // The coarse clock lags the system clock after every millisecond boundary until its thread
    // ticks; reading it for 20 ms in a loop catches that lag many times over. The service's clock
    // must never read behind a system-clock reading taken before it.
    TimeSource clock = ServiceAssembly.clock();
    long end = System.nanoTime() + 20_000_000L;
    long behind = 0;
    while (System.nanoTime() < end) {
      long before = System.currentTimeMillis();
      if (clock.laggingWallMillis() < before) {
        behind++;
      }
    }
    assertThat(behind).isZero();
    assertThat(TimeSource.system().laggingWallMillis()).isLessThanOrEqualTo(clock.wallMillis());
  }
}
