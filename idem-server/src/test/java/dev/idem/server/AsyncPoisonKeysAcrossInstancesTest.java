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
import dev.idem.tck.ExternalService;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Issue 11, {@code ordering.on_failure: block} with async delivery across instances: two services
 * share one store (PostgreSQL, then Redis). An event refused for good on the first blocks its
 * ordering key in the shared outbox; the second lists the same blocked key (it is not
 * instance-local), holds the key's later event while other keys go on, and after the first instance
 * is gone, an operator's skip on the second lets the key move on.
 */
class AsyncPoisonKeysAcrossInstancesTest {
  static final String TOKEN = "poison-instances-token";
  static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void onPostgreSql() throws Exception {
    ExternalService pg =
        ExternalService.require(
            "PostgreSQL",
            "IDEM_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
            5432,
            "pg_ctlcluster 15 main start");
    String prefix = "p" + UUID.randomUUID().toString().replace("-", "").substring(0, 10) + "_";
    try {
      blockOnOneInstanceSkipOnTheOther(
          "{ type: jdbc, url: \"%s\", prefix: %s }".formatted(pg.url(), prefix));
    } finally {
      StoreOverrideTest.dropTables(pg.url(), prefix);
    }
  }

  @Test
  void onRedis() throws Exception {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    String prefix = "idem-poison:" + UUID.randomUUID().toString().substring(0, 8) + ":";
    try {
      blockOnOneInstanceSkipOnTheOther(
          "{ type: redis, url: \"%s\", prefix: \"%s\" }".formatted(redis.url(), prefix));
    } finally {
      removePrefix(redis.url(), prefix);
    }
  }

  void blockOnOneInstanceSkipOnTheOther(String store) throws Exception {
    try (Receiver receiver = new Receiver()) {
      String yaml =
          """
          server: { host: 127.0.0.1, port: 0, admin_token: %s }
          store: %s
          pipelines:
            - id: orders
              source: { webhook: { path: /hooks/orders } }
              dedup: { key: source.id }
              ordering: { key: customer, on_failure: block }
              deliver: { mode: async, retries: 0, http: { url: "%s", timeout: 2s } }
          """
              .formatted(TOKEN, store, receiver.uri("/orders"));
      IdemConfig c = ConfigLoader.parse("instances.yaml", yaml, n -> null);
      IdemServer first =
          IdemServer.start(
              c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()));
      try (IdemServer second =
          IdemServer.start(
              c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()))) {
        Http one = new Http(first.uri());
        Http two = new Http(second.uri());

        // given o-1 of c-1, accepted by the first instance and refused downstream for good
        receiver.respond(400, "{\"error\":\"bad total\"}");
        assertThat(one.post("/hooks/orders", event("o-1", "c-1")).statusCode()).isEqualTo(202);
        await().atMost(Duration.ofSeconds(30)).until(() -> blocked(one).size() == 1);
        receiver.respond(200, "{\"ok\":true}");

        // then the second instance lists the same blocked key
        JsonNode onTwo = admin(two, "GET", "/admin/pipelines/orders/blocked-keys");
        assertThat(onTwo.get("instance_local").asBoolean()).isFalse();
        assertThat(onTwo.get("blocked_keys")).hasSize(1);
        assertThat(onTwo.get("blocked_keys").get(0).get("outbox_id"))
            .isEqualTo(blocked(one).get(0).get("outbox_id"));
        String orderingKey = onTwo.get("blocked_keys").get(0).get("ordering_key").asText();

        // when c-1's next event and c-2's arrive at the second instance
        assertThat(two.post("/hooks/orders", event("o-2", "c-1")).statusCode()).isEqualTo(202);
        assertThat(two.post("/hooks/orders", event("o-3", "c-2")).statusCode()).isEqualTo(202);

        // then c-2's is delivered and c-1's waits, on both instances
        await().atMost(Duration.ofSeconds(30)).until(() -> ids(receiver).contains("o-3"));
        assertThat(ids(receiver)).doesNotContain("o-2");

        // when the first instance is gone and an operator skips the key on the second
        first.close();
        JsonNode skipped =
            admin(two, "POST", "/admin/pipelines/orders/blocked-keys/" + orderingKey + "/skip");
        assertThat(skipped.get("skipped").asBoolean()).isTrue();

        // then the key moves on, and the skipped event is a dead letter
        await().atMost(Duration.ofSeconds(30)).until(() -> ids(receiver).contains("o-2"));
        assertThat(ids(receiver)).containsExactly("o-1", "o-3", "o-2");
        assertThat(blocked(two)).isEmpty();
        assertThat(admin(two, "GET", "/admin/pipelines/orders/dead-letters").get("dead_letters"))
            .hasSize(1);
      } finally {
        first.close();
      }
    }
  }

  static String event(String id, String customer) {
    return "{\"id\":\"%s\",\"customer\":\"%s\"}".formatted(id, customer);
  }

  static JsonNode admin(Http http, String method, String path) throws Exception {
    return JSON.readTree(http.method(method, path, "Authorization", "Bearer " + TOKEN).body());
  }

  static JsonNode blocked(Http http) throws Exception {
    return admin(http, "GET", "/admin/pipelines/orders/blocked-keys").get("blocked_keys");
  }

  static List<String> ids(Receiver receiver) {
    return receiver.received().stream()
        .map(r -> r.body().replaceAll(".*\"id\":\"([^\"]+)\".*", "$1"))
        .toList();
  }

  static void removePrefix(String url, String prefix) {
    RedisClient client = RedisClient.create(url);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      ScanCursor cursor = ScanCursor.INITIAL;
      ScanArgs args = new ScanArgs().match(prefix + "*").limit(1000);
      do {
        var page = c.sync().scan(cursor, args);
        if (!page.getKeys().isEmpty()) {
          c.sync().unlink(page.getKeys().toArray(new String[0]));
        }
        cursor = page;
      } while (!cursor.isFinished());
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
