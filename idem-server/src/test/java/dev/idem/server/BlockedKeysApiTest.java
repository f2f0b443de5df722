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
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 11, poison keys with async delivery ({@code ordering.on_failure: block}) through the admin
 * API, on a service with a real HTTP receiver: an event refused for good blocks only its ordering
 * key; {@code GET /admin/pipelines/{id}/blocked-keys} lists it (key, since, attempts, last error,
 * the blocked event); skip makes it a dead letter and the key moves on; retry delivers it again,
 * then the key's later events, in order. Operator auth as for the other admin endpoints.
 */
class BlockedKeysApiTest {
  static final String TOKEN = "blocked-keys-api-token";
  static final ObjectMapper JSON = new ObjectMapper();

  Receiver receiver;
  IdemServer server;
  Http http;

  @BeforeEach
  void start() {
    receiver = new Receiver();
    IdemConfig c =
        ConfigLoader.parse(
            "blocked.yaml",
            """
            server: { host: 127.0.0.1, port: 0, admin_token: %s }
            store: { type: memory }
            pipelines:
              - id: orders
                source: { webhook: { path: /hooks/orders } }
                dedup: { key: source.id }
                ordering: { key: customer, on_failure: block }
                deliver:
                  mode: async
                  retries: 0
                  http: { url: "%s", timeout: 2s }
              - id: synced
                source: { webhook: { path: /hooks/synced } }
                dedup: { key: source.id }
                ordering: { key: customer, max_attempts: 1, on_failure: block }
                deliver: { retries: 0, http: { url: "%s", timeout: 2s } }
              - id: plain
                source: { webhook: { path: /hooks/plain } }
                dedup: { key: source.id }
                deliver: { mode: async, stdout: {} }
            """
                .formatted(TOKEN, receiver.uri("/orders"), receiver.uri("/synced")),
            n -> null);
    server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());
  }

  @AfterEach
  void stop() {
    server.close();
    receiver.close();
  }

  HttpResponse<String> admin(String method, String path) {
    return http.method(method, path, "Authorization", "Bearer " + TOKEN);
  }

  JsonNode adminJson(String method, String path) throws Exception {
    return JSON.readTree(admin(method, path).body());
  }

  JsonNode blockedKeys() throws Exception {
    return adminJson("GET", "/admin/pipelines/orders/blocked-keys").get("blocked_keys");
  }

  static String event(String id, String customer) {
    return "{\"id\":\"%s\",\"customer\":\"%s\"}".formatted(id, customer);
  }

  List<String> deliveredIds() {
    return receiver.received().stream()
        .filter(r -> r.path().equals("/orders"))
        .map(r -> r.body().replaceAll(".*\"id\":\"([^\"]+)\".*", "$1"))
        .toList();
  }

  /** Posts o-1 of customer c-1 while downstream refuses it for good, and waits for the block. */
  JsonNode blockCustomerOne() throws Exception {
    receiver.respond(400, "{\"error\":\"bad total\"}");
    assertThat(http.post("/hooks/orders", event("o-1", "c-1")).statusCode()).isEqualTo(202);
    await().atMost(Duration.ofSeconds(20)).until(() -> blockedKeys().size() == 1);
    receiver.respond(200, "{\"ok\":true}");
    return blockedKeys().get(0);
  }

  @Test
  void aBlockedKeyIsListedAndSkippingItMakesADeadLetterAndTheKeyMovesOn() throws Exception {
    // given o-1 of customer c-1 refused for good (400), which blocks c-1
    Instant before = Instant.now().minusSeconds(1);
    JsonNode b = blockCustomerOne();

    // then the list says which key, since when, how often, why, and which event
    JsonNode answer = adminJson("GET", "/admin/pipelines/orders/blocked-keys");
    assertThat(answer.get("instance_local").asBoolean()).isFalse();
    assertThat(answer.get("on_failure").asText()).isEqualTo("block");
    assertThat(b.get("ordering_key").asText()).matches("[0-9a-f]{64}");
    assertThat(b.get("blocked").asBoolean()).isTrue();
    assertThat(Instant.parse(b.get("since").asText())).isAfter(before);
    assertThat(b.get("attempts").asInt()).isEqualTo(1);
    assertThat(b.get("last_error").asText()).contains("400");
    assertThat(b.get("event_digest").asText()).hasSize(64);
    long outboxId = b.get("outbox_id").asLong();
    assertThat(adminJson("GET", "/admin/pipelines/orders/dead-letters").get("dead_letters"))
        .isEmpty();

    // when c-1 gets a later event and c-2 one too, then c-2's is delivered and c-1's waits
    assertThat(http.post("/hooks/orders", event("o-2", "c-1")).statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", event("o-3", "c-2")).statusCode()).isEqualTo(202);
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveredIds().contains("o-3"));
    JsonNode pending = adminJson("GET", "/admin/pipelines/orders/outbox").get("pending");
    assertThat(pending).hasSize(2);
    assertThat(pending.get(0).get("id").asLong()).isEqualTo(outboxId);
    assertThat(pending.get(0).get("blocked").asBoolean()).isTrue();
    assertThat(pending.get(0).get("next_attempt_at").isNull()).isTrue();
    assertThat(pending.get(0).get("last_error").asText()).doesNotContain("idem:blocked");
    assertThat(pending.get(1).get("attempts").asInt()).isZero();
    assertThat(deliveredIds()).doesNotContain("o-2");

    // when an operator skips it
    HttpResponse<String> skip =
        admin(
            "POST",
            "/admin/pipelines/orders/blocked-keys/" + b.get("ordering_key").asText() + "/skip");

    // then o-1 is a dead letter (requeueable), the key moves on, and nothing is blocked
    assertThat(skip.statusCode()).isEqualTo(200);
    JsonNode skipped = JSON.readTree(skip.body());
    assertThat(skipped.get("skipped").asBoolean()).isTrue();
    assertThat(skipped.get("note").asText()).contains("dead letter " + outboxId);
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveredIds().contains("o-2"));
    JsonNode dead = adminJson("GET", "/admin/pipelines/orders/dead-letters").get("dead_letters");
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).get("id").asLong()).isEqualTo(outboxId);
    assertThat(dead.get(0).get("reason").asText()).contains("skipped by an operator");
    assertThat(blockedKeys()).isEmpty();
    assertThat(deliveredIds()).containsExactly("o-1", "o-3", "o-2");
  }

  @Test
  void retryingABlockedKeyDeliversItsEventAgainThenItsLaterEventsInOrder() throws Exception {
    JsonNode b = blockCustomerOne();
    assertThat(http.post("/hooks/orders", event("o-2", "c-1")).statusCode()).isEqualTo(202);

    HttpResponse<String> retry =
        admin(
            "POST",
            "/admin/pipelines/orders/blocked-keys/" + b.get("ordering_key").asText() + "/retry");

    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(JSON.readTree(retry.body()).get("retried").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveredIds().size() == 3);
    // the refused attempt, then the retried one, then the key's later event
    assertThat(deliveredIds()).containsExactly("o-1", "o-1", "o-2");
    assertThat(blockedKeys()).isEmpty();
    assertThat(adminJson("GET", "/admin/pipelines/orders/dead-letters").get("dead_letters"))
        .isEmpty();
    // and the event's key stayed committed: a resend is a duplicate
    assertThat(http.post("/hooks/orders", event("o-1", "c-1")).statusCode()).isEqualTo(200);
  }

  @Test
  void theEndpointsNeedTheTokenAndSayWhatIsWrong() throws Exception {
    String path = "/admin/pipelines/orders/blocked-keys";
    assertThat(http.method("GET", path).statusCode()).isEqualTo(401);
    assertThat(http.method("GET", path, "Authorization", "Bearer wrong").statusCode())
        .isEqualTo(401);
    assertThat(http.method("POST", path + "/" + "a".repeat(64) + "/skip").statusCode())
        .isEqualTo(401);

    HttpResponse<String> unknown = admin("POST", path + "/" + "a".repeat(64) + "/retry");
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(unknown.body()).get("error").asText()).isEqualTo("not_blocked");

    HttpResponse<String> plain = admin("GET", "/admin/pipelines/plain/blocked-keys");
    assertThat(plain.statusCode()).isEqualTo(409);
    assertThat(JSON.readTree(plain.body()).get("error").asText()).isEqualTo("no_poison_keys");

    assertThat(admin("DELETE", path).statusCode()).isEqualTo(405);
  }

  @Test
  void syncBlockedKeysAreInstanceLocalAndSaySo() throws Exception {
    // given a sync event refused for good with max_attempts: 1, which blocks its key
    receiver.respond(400, "{\"error\":\"bad\"}");
    assertThat(http.post("/hooks/synced", event("s-1", "c-1")).statusCode()).isEqualTo(502);

    JsonNode answer = adminJson("GET", "/admin/pipelines/synced/blocked-keys");

    assertThat(answer.get("instance_local").asBoolean()).isTrue();
    assertThat(answer.get("note").asText()).startsWith("instance-local");
    JsonNode b = answer.get("blocked_keys").get(0);
    assertThat(b.get("blocked").asBoolean()).isTrue();
    assertThat(b.get("attempts").asInt()).isEqualTo(1);
    assertThat(b.get("since").isNull()).isFalse();
    assertThat(b.get("last_error").asText()).contains("delivery_failed");
    assertThat(b.get("outbox_id").isNull()).isTrue();
  }
}
