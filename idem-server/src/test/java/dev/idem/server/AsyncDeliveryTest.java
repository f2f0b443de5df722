package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Async delivery end to end: answered after the durable accept, delivered from the outbox with
 * retries, dead-lettered after the last, and delivered after a restart when pending at shutdown.
 */
class AsyncDeliveryTest {
  static final String TOKEN = "async-test-admin-token";
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  Receiver receiver;

  @BeforeEach
  void receiver() {
    receiver = new Receiver();
  }

  @AfterEach
  void close() {
    receiver.close();
  }

  IdemConfig config(String store, int retries) {
    return ConfigLoader.parse(
        "async.yaml",
        """
        server: { host: 127.0.0.1, port: 0, admin_token: %s }
        store: %s
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id }
            deliver:
              mode: async
              retries: %d
              backoff: 20ms
              max_backoff: 200ms
              http: { url: "%s", timeout: 2s }
        """
            .formatted(TOKEN, store, retries, receiver.uri("/orders")),
        n -> null);
  }

  static IdemServer start(IdemConfig c) {
    return IdemServer.start(
        c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()));
  }

  long deliveries(String id) {
    return receiver.received().stream().filter(r -> r.body().contains("\"" + id + "\"")).count();
  }

  @Test
  void aFailingDownstreamIsRetriedFromTheOutboxAndGetsTheEventOnce() {
    try (IdemServer server = start(config("{ type: memory }", 5))) {
      Http http = new Http(server.uri());
      // given a downstream that fails twice
      receiver.failNext(2);

      // when an event arrives, twice
      int first = http.post("/hooks/orders", "{\"id\":\"a-1\"}").statusCode();
      int again = http.post("/hooks/orders", "{\"id\":\"a-1\"}").statusCode();

      // then it is accepted at once, and delivered exactly once after the retries
      assertThat(first).isEqualTo(202);
      assertThat(again).isEqualTo(200);
      await().atMost(Duration.ofSeconds(20)).until(() -> deliveries("a-1") == 1);
      assertThat(receiver.received())
          .filteredOn(r -> r.body().contains("a-1"))
          .singleElement()
          .satisfies(r -> assertThat(r.idempotencyKey()).matches("orders:[0-9a-f]{64}"));
      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () ->
                  http.get("/metrics")
                      .body()
                      .contains("idem_outbox_depth{pipeline=\"orders\"} 0.0"));
    }
  }

  @Test
  void afterTheLastRetryTheEventIsADeadLetterAndItsKeyStaysAccepted() throws Exception {
    try (IdemServer server = start(config("{ type: memory }", 1))) {
      Http http = new Http(server.uri());
      receiver.failNext(1_000);

      assertThat(http.post("/hooks/orders", "{\"id\":\"dead-1\",\"total\":3}").statusCode())
          .isEqualTo(202);

      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () ->
                  JSON.readTree(
                              http.get(
                                      "/admin/pipelines/orders/dead-letters",
                                      "Authorization",
                                      "Bearer " + TOKEN)
                                  .body())
                          .get("dead_letters")
                          .size()
                      == 1);
      JsonNode dead =
          JSON.readTree(
                  http.get(
                          "/admin/pipelines/orders/dead-letters",
                          "Authorization",
                          "Bearer " + TOKEN)
                      .body())
              .get("dead_letters")
              .get(0);
      assertThat(dead.get("attempts").asInt()).isEqualTo(2);
      assertThat(dead.get("body").get("id").asText()).isEqualTo("dead-1");
      assertThat(dead.get("idempotency_key").asText()).startsWith("orders:");
      assertThat(http.post("/hooks/orders", "{\"id\":\"dead-1\",\"total\":3}").statusCode())
          .isEqualTo(200);
      assertThat(deliveries("dead-1")).isZero();
      assertThat(http.get("/metrics").body())
          .contains("idem_deliveries_total{outcome=\"dead_lettered\",pipeline=\"orders\"} 1.0");
    }
  }

  @Test
  void deliveriesPendingAtShutdownAreDeliveredAfterARestart() {
    IdemConfig c = config("{ type: rocksdb, path: %s }".formatted(dir.resolve("data")), 20);
    // given an event accepted while the downstream is down, and the service stopped
    receiver.failNext(1_000);
    try (IdemServer server = start(c)) {
      assertThat(new Http(server.uri()).post("/hooks/orders", "{\"id\":\"p-1\"}").statusCode())
          .isEqualTo(202);
    }
    assertThat(deliveries("p-1")).isZero();

    // when the downstream is back and the service starts again on the same directory
    receiver.failNext(0);
    try (IdemServer server = start(c)) {
      // then the pending event is delivered, once, and its key is still a duplicate
      await().atMost(Duration.ofSeconds(30)).until(() -> deliveries("p-1") == 1);
      assertThat(new Http(server.uri()).post("/hooks/orders", "{\"id\":\"p-1\"}").statusCode())
          .isEqualTo(200);
    }
    assertThat(deliveries("p-1")).isEqualTo(1);
  }
}
