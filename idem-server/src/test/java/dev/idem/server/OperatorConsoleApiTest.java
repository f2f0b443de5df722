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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The operator's admin actions end to end, on a service with an async pipeline and a real HTTP
 * receiver: dead letters listed, read, requeued (delivered again with the same Idempotency-Key, the
 * key still a duplicate for senders) and purged; redelivery of a committed key; explain; the
 * pipelines overview and recent decisions.
 */
class OperatorConsoleApiTest {
  static final String TOKEN = "console-api-test-token";
  static final ObjectMapper JSON = new ObjectMapper();

  Receiver receiver;
  IdemServer server;
  Http http;

  @BeforeEach
  void start() {
    receiver = new Receiver();
    IdemConfig c =
        ConfigLoader.parse(
            "console.yaml",
            """
            server: { host: 127.0.0.1, port: 0, admin_token: %s }
            store: { type: memory }
            pipelines:
              - id: orders
                source: { webhook: { path: /hooks/orders } }
                dedup: { key: source.id }
                deliver:
                  mode: async
                  retries: 1
                  backoff: 20ms
                  max_backoff: 100ms
                  http: { url: "%s", timeout: 2s }
              - id: quiet
                source: { webhook: { path: /hooks/quiet } }
                dedup: { key: source.id }
                transform: { jq: 'select(.keep == true)' }
                deliver: { stdout: {} }
            """
                .formatted(TOKEN, receiver.uri("/orders")),
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

  JsonNode admin(String method, String path) throws Exception {
    HttpResponse<String> r = http.method(method, path, "Authorization", "Bearer " + TOKEN);
    return JSON.readTree(r.body());
  }

  HttpResponse<String> adminPost(String path, String body) {
    return http.post(path, body, "Authorization", "Bearer " + TOKEN);
  }

  JsonNode deadLetters() throws Exception {
    return admin("GET", "/admin/pipelines/orders/dead-letters").get("dead_letters");
  }

  long deliveries(String id) {
    return receiver.received().stream().filter(r -> r.body().contains("\"" + id + "\"")).count();
  }

  @Test
  void aDeadLetterIsShownRequeuedDeliveredWithItsIdempotencyKeyAndTheKeyStaysADuplicate()
      throws Exception {
    // given a downstream that refuses the event for good (400), so it is dead at once
    receiver.respond(400, "{\"error\":\"bad total\"}");
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-1\",\"total\":1}").statusCode())
        .isEqualTo(202);
    await().atMost(Duration.ofSeconds(20)).until(() -> deadLetters().size() == 1);
    JsonNode listed = deadLetters().get(0);
    long id = listed.get("id").asLong();

    // when it is shown
    JsonNode one = admin("GET", "/admin/pipelines/orders/dead-letters/" + id);

    // then it carries the event, the key, the attempts, the error and the downstream status
    assertThat(one.get("body").get("id").asText()).isEqualTo("o-1");
    assertThat(one.get("digest").asText()).hasSize(64);
    assertThat(one.get("attempts").asInt()).isEqualTo(1);
    assertThat(one.get("reason").asText()).contains("400");
    assertThat(one.get("downstream_status").asInt()).isEqualTo(400);
    String idempotencyKey = one.get("idempotency_key").asText();

    // when the downstream is fixed and the dead letter requeued
    receiver.respond(200, "{\"ok\":true}");
    JsonNode requeued = admin("POST", "/admin/pipelines/orders/dead-letters/" + id + "/requeue");

    // then it is delivered once more, with the same Idempotency-Key, and is no dead letter now
    assertThat(requeued.get("requeued").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveries("o-1") == 1);
    assertThat(receiver.received())
        .filteredOn(r -> r.body().contains("o-1"))
        .singleElement()
        .satisfies(r -> assertThat(r.idempotencyKey()).isEqualTo(idempotencyKey));
    assertThat(deadLetters()).isEmpty();
    // and a sender's retry is still a duplicate
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-1\",\"total\":1}").statusCode())
        .isEqualTo(200);
    // and requeueing it again says it is gone
    HttpResponse<String> again =
        http.method(
            "POST",
            "/admin/pipelines/orders/dead-letters/" + id + "/requeue",
            "Authorization",
            "Bearer " + TOKEN);
    assertThat(again.statusCode()).isEqualTo(404);
    assertThat(again.body()).contains("no_dead_letter");
  }

  @Test
  void deadLettersAreListedNewestFirstAndPurgedOneOrAll() throws Exception {
    receiver.respond(400, "{}");
    for (String id : new String[] {"p-1", "p-2", "p-3"}) {
      http.post("/hooks/orders", "{\"id\":\"" + id + "\"}");
      String wanted = id;
      await().atMost(Duration.ofSeconds(20)).until(() -> deadLetters().toString().contains(wanted));
    }

    JsonNode page = admin("GET", "/admin/pipelines/orders/dead-letters?limit=2");
    assertThat(page.get("dead_letters").get(0).get("body").get("id").asText()).isEqualTo("p-3");
    assertThat(page.get("dead_letters").get(1).get("body").get("id").asText()).isEqualTo("p-2");
    JsonNode next =
        admin(
            "GET",
            "/admin/pipelines/orders/dead-letters?limit=2&after=" + page.get("next").asText());
    assertThat(next.get("dead_letters").get(0).get("body").get("id").asText()).isEqualTo("p-1");
    assertThat(
            admin("GET", "/admin/pipelines/orders/dead-letters?until=2000-01-01T00:00:00Z")
                .get("dead_letters"))
        .isEmpty();

    long newest = page.get("dead_letters").get(0).get("id").asLong();
    assertThat(
            admin("DELETE", "/admin/pipelines/orders/dead-letters/" + newest)
                .get("purged")
                .asBoolean())
        .isTrue();
    assertThat(deadLetters()).hasSize(2);
    assertThat(admin("DELETE", "/admin/pipelines/orders/dead-letters").get("purged").asLong())
        .isEqualTo(2);
    assertThat(deadLetters()).isEmpty();
  }

  @Test
  void redeliverRequeuesACommittedKeysDeadLetterAndSaysWhenTheEventIsNotKept() throws Exception {
    // a delivered key: its event is not kept
    http.post("/hooks/orders", "{\"id\":\"r-ok\"}");
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveries("r-ok") == 1);
    HttpResponse<String> notKept = adminPost("/admin/pipelines/orders/keys/r-ok/redeliver", "");
    assertThat(notKept.statusCode()).isEqualTo(404);
    assertThat(notKept.body()).contains("event_not_kept").contains("forget the key");

    // a dead-lettered key: redelivered from its dead letter
    receiver.respond(400, "{}");
    http.post("/hooks/orders", "{\"id\":\"r-dead\"}");
    await().atMost(Duration.ofSeconds(20)).until(() -> deadLetters().size() == 1);
    receiver.respond(200, "{}");
    HttpResponse<String> redelivered =
        adminPost("/admin/pipelines/orders/keys/r-dead/redeliver", "");
    assertThat(redelivered.statusCode()).isEqualTo(200);
    await().atMost(Duration.ofSeconds(20)).until(() -> deliveries("r-dead") == 1);

    // an absent key
    assertThat(adminPost("/admin/pipelines/orders/keys/never/redeliver", "").statusCode())
        .isEqualTo(409);
  }

  @Test
  void explainNamesTheKeyItsStateAndTheDecisionAndChangesNothing() throws Exception {
    String event = JSON.writeValueAsString(java.util.Map.of("body", "{\"id\":\"e-1\"}"));

    // a new key
    JsonNode fresh = JSON.readTree(adminPost("/admin/pipelines/orders/explain", event).body());
    assertThat(fresh.get("decision").asText()).isEqualTo("pass");
    assertThat(fresh.get("key").get("rule").asText()).contains("id");
    assertThat(fresh.get("key").get("digest").asText()).hasSize(64);
    assertThat(fresh.get("state").get("state").asText()).isEqualTo("absent");
    // explaining reserved nothing: the event is still new
    assertThat(http.post("/hooks/orders", "{\"id\":\"e-1\"}").statusCode()).isEqualTo(202);

    // now a duplicate, with the time it was accepted
    JsonNode dup = JSON.readTree(adminPost("/admin/pipelines/orders/explain", event).body());
    assertThat(dup.get("decision").asText()).isEqualTo("duplicate");
    assertThat(dup.get("answer").get("status").asInt()).isEqualTo(200);
    assertThat(dup.get("state").get("state").asText()).isEqualTo("committed");
    assertThat(dup.get("why").asText()).contains("duplicate").contains("accepted at");

    // no key
    JsonNode noKey =
        JSON.readTree(adminPost("/admin/pipelines/orders/explain", "{\"body\":\"{}\"}").body());
    assertThat(noKey.get("decision").asText()).isEqualTo("rejected");
    assertThat(noKey.get("answer").get("status").asInt()).isEqualTo(400);

    // dropped by the transform
    JsonNode dropped =
        JSON.readTree(
            adminPost("/admin/pipelines/quiet/explain", "{\"body\":\"{\\\"id\\\":\\\"q\\\"}\"}")
                .body());
    assertThat(dropped.get("decision").asText()).isEqualTo("dropped");

    // a malformed request
    HttpResponse<String> bad = adminPost("/admin/pipelines/orders/explain", "[1]");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("bad_explain_request");
  }

  @Test
  void thePipelinesOverviewAndRecentDecisionsShowWhatHappened() throws Exception {
    http.post("/hooks/orders", "{\"id\":\"d-1\"}");
    http.post("/hooks/orders", "{\"id\":\"d-1\"}");

    JsonNode pipelines = admin("GET", "/admin/pipelines").get("pipelines");
    assertThat(pipelines).hasSize(2);
    JsonNode orders = pipelines.get(0);
    assertThat(orders.get("id").asText()).isEqualTo("orders");
    assertThat(orders.get("source").asText()).isEqualTo("webhook /hooks/orders");
    assertThat(orders.get("store").asText()).isNotBlank();
    assertThat(orders.get("delivery").asText()).isEqualTo("async");
    assertThat(orders.get("counts").get("pass").asLong()).isEqualTo(1);
    assertThat(orders.get("counts").get("duplicate").asLong()).isEqualTo(1);
    assertThat(orders.has("outbox_depth")).isTrue();

    JsonNode decisions = admin("GET", "/admin/pipelines/orders/decisions").get("decisions");
    assertThat(decisions.findValuesAsText("decision")).contains("pass", "duplicate");
    assertThat(decisions.get(0).get("digest").asText()).hasSize(64);

    JsonNode series = admin("GET", "/admin/pipelines/orders/series");
    assertThat(series.get("points").size()).isGreaterThanOrEqualTo(1);
    assertThat(series.get("points").get(0).has("pass")).isTrue();
  }
}
