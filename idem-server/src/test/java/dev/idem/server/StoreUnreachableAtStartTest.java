package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import dev.idem.tck.ExternalService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 §3: one unreachable store stopped the whole service at start. Now the service starts,
 * serves the pipelines on other stores, answers 503 with Retry-After for the pipeline whose Redis
 * is not there and reports it on /health, and serves that pipeline too once a redis-server (started
 * by the test on a free loopback port) is there. {@code fail_fast: true} keeps the old start
 * failure.
 */
class StoreUnreachableAtStartTest {
  @TempDir Path dir;

  private Process redis;

  @AfterEach
  void stopRedis() throws InterruptedException {
    if (redis != null) {
      redis.destroy();
      if (!redis.waitFor(10, TimeUnit.SECONDS)) {
        redis.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    }
  }

  private IdemConfig config(int redisPort, String extra) {
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: rocksdb, path: %s }
        pipelines:
          - id: remote
            source: { webhook: { path: /remote } }
            dedup:
              key: source.id
              store: { type: redis, url: "redis://127.0.0.1:%d", timeout: 500ms%s }
            deliver: { stdout: {} }
          - id: local
            source: { webhook: { path: /local } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
        """;
    return ConfigLoader.parse(
        "s.yaml", yaml.formatted(dir.resolve("data"), redisPort, extra), n -> null);
  }

  private void startRedis(int port) throws IOException {
    try {
      redis =
          new ProcessBuilder(
                  List.of(
                      "redis-server",
                      "--port",
                      "" + port,
                      "--bind",
                      "127.0.0.1",
                      "--save",
                      "",
                      "--appendonly",
                      "no",
                      "--dir",
                      dir.toString()))
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("redis.log").toFile())
              .start();
    } catch (IOException e) {
      String message =
          "redis-server is not installed: install it, e.g. apt-get install redis-server";
      if (ExternalService.isCi()) {
        Assertions.fail("CI=true and " + message);
      }
      Assumptions.abort("skipped: " + message);
    }
  }

  @Test
  void theServiceStartsServesOtherStoresAndServesTheMissingOneOnceItIsThere() throws Exception {
    // Given a pipeline whose Redis is not running, and one on the local store
    int port = freePort();
    IdemConfig config = config(port, "");

    // When the service starts
    try (IdemServer server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new TestEdge(), TimeSource.system()))) {
      Http http = new Http(server.uri());

      // Then the local pipeline is served, the other answers 503 with Retry-After,
      // and /health is 503 naming the store
      assertThat(http.post("/local", "{\"id\":\"l-1\"}").statusCode()).isEqualTo(202);
      HttpResponse<String> remote = http.post("/remote", "{\"id\":\"r-1\"}");
      assertThat(remote.statusCode()).isEqualTo(503);
      assertThat(remote.headers().firstValue("Retry-After")).isPresent();
      assertThat(remote.body()).contains("store_unavailable");
      HttpResponse<String> health = http.get("/health");
      assertThat(health.statusCode()).isEqualTo(503);
      assertThat(health.body()).contains("127.0.0.1:" + port).contains("not been reachable");

      // And once Redis is there, the pipeline is served and /health is up
      startRedis(port);
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> http.post("/remote", "{\"id\":\"r-1\"}").statusCode() == 202);
      assertThat(http.post("/remote", "{\"id\":\"r-1\"}").statusCode()).isEqualTo(200);
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> http.get("/health").statusCode() == 200);
    }
  }

  @Test
  void failFastKeepsTheStartFailure() throws Exception {
    IdemConfig config = config(freePort(), ", fail_fast: true");

    assertThatThrownBy(() -> ServiceAssembly.assemble(config, new TestEdge(), TimeSource.system()))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("cannot open store redis:");
  }
}
