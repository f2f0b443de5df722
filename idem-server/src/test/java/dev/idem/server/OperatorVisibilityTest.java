package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.LogCapture;
import dev.idem.server.support.Receiver;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 8, sections 3 and 4, over real HTTP with the service's real parts: what a failure tells the
 * (unauthenticated) sender is a code and a fixed message; what it tells the operator (the log and
 * the admin API) is everything.
 */
class OperatorVisibilityTest {
  static final String TOKEN = "admin-token-for-operator-tests";
  static final String DOWNSTREAM_SECRET_BODY = "{\"trace\":\"at com.acme.internal.Db.connect\"}";
  static final String GITHUB_SECRET = "github-test-secret";
  static final ObjectMapper JSON = new ObjectMapper();

  Receiver downstream;
  IdemServer server;
  Http http;
  LogCapture logs;

  @BeforeEach
  void start() {
    logs = LogCapture.idem();
    downstream = new Receiver();
    downstream.respond(500, DOWNSTREAM_SECRET_BODY);
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0, admin_token: %3$s }
        store: { type: memory }
        pipelines:
          - id: sync-down
            source: { webhook: { path: /hooks/sync } }
            dedup: { key: source.id }
            deliver: { mode: sync, retries: 1, backoff: 10ms, http: { url: "%1$s", timeout: 5s } }
          - id: async-down
            source: { webhook: { path: /hooks/async } }
            dedup: { key: source.id }
            deliver: { mode: async, retries: 5, backoff: 10h, max_backoff: 10h, http: { url: "%1$s", timeout: 5s } }
          - id: jq-fails
            source: { webhook: { path: /hooks/jq } }
            dedup: { key: source.id }
            transform: { jq: '{secret_field_name: (.amount | tonumber)}' }
            deliver: { stdout: {} }
          - id: github
            source: { webhook: { path: /hooks/github, signature: { scheme: github, secret: %2$s } } }
            dedup: {}
            deliver: { http: { url: "%1$s" } }
          - id: stripe
            source: { webhook: { path: /hooks/stripe, signature: { scheme: stripe, secret: webhook_secret } } }
            dedup: {}
            deliver: { http: { url: "%1$s" } }
        """
            .formatted(downstream.uri("/internal/orders-service"), GITHUB_SECRET, TOKEN);
    IdemConfig config = ConfigLoader.parse("operator.yaml", yaml, n -> null);
    server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());
  }

  @AfterEach
  void stop() {
    server.close();
    downstream.close();
    logs.close();
  }

  static String tokenId() {
    try {
      byte[] d =
          java.security.MessageDigest.getInstance("SHA-256")
              .digest(TOKEN.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return java.util.HexFormat.of().formatHex(d, 0, 6);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static JsonNode json(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body());
  }

  @Test
  void aFailedSyncDeliveryTellsTheSenderNothingInternalAndLogsEveryAttempt() throws Exception {
    // when downstream answers 500 with an internal body to both attempts
    HttpResponse<String> r = http.post("/hooks/sync", "{\"id\":\"s-1\"}");

    // then the sender gets the code and a fixed message, without the URL, status or body
    assertThat(r.statusCode()).isEqualTo(502);
    JsonNode body = json(r);
    assertThat(body.get("error").asText()).isEqualTo("delivery_failed");
    assertThat(r.body())
        .doesNotContain("internal")
        .doesNotContain("127.0.0.1")
        .doesNotContain("HTTP 500")
        .doesNotContain("com.acme");
    assertThat(body.get("message").asText()).contains("retry");

    // and the operator's log has each attempt, n of m, with the downstream's status and answer
    List<String> attempts =
        logs.lines(l -> l.contains("delivery attempt failed pipeline=sync-down"));
    assertThat(attempts).hasSize(2);
    assertThat(attempts.get(0))
        .startsWith("WARN ")
        .contains("attempt=1/2 next_attempt=20")
        .contains("HTTP 500 from POST http://127.0.0.1:")
        .contains("/internal/orders-service")
        .contains("com.acme.internal.Db.connect");
    assertThat(attempts.get(1))
        .contains("attempt=2/2 next_attempt=none (sync delivery: no retries");
    assertThat(
            logs.lines(
                l -> l.contains("pipeline=sync-down") && l.contains("answered delivery_failed")))
        .hasSize(1);
  }

  @Test
  void aFailingTransformTellsTheSenderNeitherTheProgramNorItsError() throws Exception {
    HttpResponse<String> r = http.post("/hooks/jq", "{\"id\":\"j-1\",\"amount\":\"12x\"}");

    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(json(r).get("error").asText()).isEqualTo("transform_failed");
    assertThat(r.body()).doesNotContain("secret_field_name").doesNotContain("tonumber");
    assertThat(logs.lines(l -> l.contains("pipeline=jq-fails") && l.contains("transform failed")))
        .singleElement()
        .asString()
        .contains("secret_field_name");
  }

  @Test
  void aBadSignatureIsLoggedWithThePipelineTheCheckAndTheDeliveryId() {
    HttpResponse<String> r =
        http.post(
            "/hooks/github",
            "{\"zen\":\"hi\"}",
            "X-GitHub-Delivery",
            "72d3162e-cc78-11e3-81ab-4c9367dc0958",
            "X-Hub-Signature-256",
            "sha256=" + "0".repeat(64));

    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(logs.lines(l -> l.contains("rejected pipeline=github")))
        .singleElement()
        .asString()
        .startsWith("WARN ")
        .contains("check=signature reason=INVALID")
        .contains("delivery=72d3162e-cc78-11e3-81ab-4c9367dc0958")
        .contains("status=401");
  }

  @Test
  void aCorrectlySignedButOldStripeEventIsLoggedAsStaleWithItsEventId() throws Exception {
    // given a Stripe-Signature for t=1533204620 (2018; the timestamp of Stripe's own test vector)
    String body = "{\"id\":\"evt_test_webhook\",\"object\":\"event\"}";
    javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
    mac.init(
        new javax.crypto.spec.SecretKeySpec(
            "webhook_secret".getBytes(java.nio.charset.StandardCharsets.UTF_8), "HmacSHA256"));
    String v1 =
        java.util.HexFormat.of()
            .formatHex(
                mac.doFinal(
                    ("1533204620." + body).getBytes(java.nio.charset.StandardCharsets.UTF_8)));

    HttpResponse<String> r =
        http.post("/hooks/stripe", body, "Stripe-Signature", "t=1533204620,v1=" + v1);

    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(logs.lines(l -> l.contains("rejected pipeline=stripe")))
        .singleElement()
        .asString()
        .contains("check=signature reason=STALE delivery=evt_test_webhook status=401");
  }

  @Test
  void eachAsyncAttemptIsLoggedAndThePendingEntryShowsItsLastErrorInTheAdminApi() throws Exception {
    // when an async event is accepted and its first delivery fails
    HttpResponse<String> r = http.post("/hooks/async", "{\"id\":\"a-1\"}");
    assertThat(r.statusCode()).isEqualTo(202);
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                !logs.lines(l -> l.contains("delivery attempt failed pipeline=async-down"))
                    .isEmpty());

    // then the attempt's line says 1 of 6 and when the next one is due (about an hour on)
    String line = logs.lines(l -> l.contains("delivery attempt failed pipeline=async-down")).get(0);
    assertThat(line).contains("attempt=1/6 next_attempt=").contains("HTTP 500 from POST");
    // and the admin API lists the entry with its attempts, next attempt and last error
    HttpResponse<String> outbox =
        http.get("/admin/pipelines/async-down/outbox", "Authorization", "Bearer " + TOKEN);
    assertThat(outbox.statusCode()).isEqualTo(200);
    JsonNode root = json(outbox);
    assertThat(root.get("depth").asLong()).isEqualTo(1);
    JsonNode entry = root.get("pending").get(0);
    assertThat(entry.get("attempts").asInt()).isEqualTo(1);
    assertThat(entry.get("idempotency_key").asText()).startsWith("async-down:");
    assertThat(entry.get("last_error").asText())
        .contains("HTTP 500 from POST")
        .contains("/internal/orders-service")
        .contains("com.acme.internal.Db.connect");
    Instant next = Instant.parse(entry.get("next_attempt_at").asText());
    assertThat(next).isAfter(Instant.now());
    assertThat(line).contains("next_attempt=" + next);
    // a sync pipeline has no outbox to show
    HttpResponse<String> sync =
        http.get("/admin/pipelines/sync-down/outbox", "Authorization", "Bearer " + TOKEN);
    assertThat(sync.statusCode()).isEqualTo(409);
    assertThat(
            http.get(
                    "/admin/pipelines/async-down/outbox?limit=0",
                    "Authorization",
                    "Bearer " + TOKEN)
                .statusCode())
        .isEqualTo(400);
  }

  @Test
  void clearingAPipelineIsLoggedWithWhoAndHowMany() {
    downstream.respond(200, "{}");
    http.post("/hooks/sync", "{\"id\":\"c-1\"}");
    http.post("/hooks/sync", "{\"id\":\"c-2\"}");

    HttpResponse<String> r =
        http.delete("/admin/pipelines/sync-down/keys", "Authorization", "Bearer " + TOKEN);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(logs.lines(l -> l.contains("admin clear pipeline=sync-down")))
        .singleElement()
        .asString()
        .startsWith("INFO ")
        .contains("removed=2 keys")
        .contains("by token=sha256:" + tokenId())
        .doesNotContain(TOKEN);
  }
}
