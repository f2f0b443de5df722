package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The service as built from YAML with its real parts (key rules, memory store, HTTP sink, jq,
 * signature verifiers), over real HTTP on both sides: a sender and a downstream receiver.
 */
class ServiceEndToEndTest {
  static final String STRIPE_SECRET = "whsec_stripe_test_secret";
  static final String GITHUB_SECRET = "github-test-secret";
  static final String SHOPIFY_SECRET = "shopify-test-secret";
  static final byte[] STANDARD_KEY =
      "standard-webhooks-key-32-bytes!!".getBytes(StandardCharsets.UTF_8);
  static final String STANDARD_SECRET = "whsec_" + Base64.getEncoder().encodeToString(STANDARD_KEY);

  static Receiver receiver;
  static IdemServer server;
  static Http http;

  @BeforeAll
  static void start() {
    receiver = new Receiver();
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory }
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id }
            deliver: { retries: 1, backoff: 10ms, http: { url: "%1$s", timeout: 5s } }
          - id: trimmed
            source: { webhook: { path: /hooks/trimmed } }
            dedup: { key: source.id }
            transform: { jq: '{id: .id, total: .total_price}' }
            deliver: { http: { url: "%2$s" } }
          - id: payments
            source: { webhook: { path: /hooks/payments } }
            dedup: { key: [source.account, source.payment], mode: replay }
            deliver: { http: { url: "%3$s" } }
          - id: stripe
            source: { webhook: { path: /hooks/stripe, signature: { scheme: stripe, secret: %4$s } } }
            dedup: {}
            deliver: { http: { url: "%5$s" } }
          - id: github
            source: { webhook: { path: /hooks/github, signature: { scheme: github, secret: %6$s } } }
            dedup: {}
            deliver: { http: { url: "%5$s" } }
          - id: shopify
            source: { webhook: { path: /hooks/shopify, signature: { scheme: shopify, secret: %7$s } } }
            dedup: {}
            deliver: { http: { url: "%5$s" } }
          - id: standard
            source: { webhook: { path: /hooks/standard, signature: { scheme: standard, secret: "%8$s" } } }
            dedup: {}
            deliver: { http: { url: "%5$s" } }
        """
            .formatted(
                receiver.uri("/orders"),
                receiver.uri("/trimmed"),
                receiver.uri("/payments"),
                STRIPE_SECRET,
                receiver.uri("/signed"),
                GITHUB_SECRET,
                SHOPIFY_SECRET,
                STANDARD_SECRET);
    IdemConfig config = ConfigLoader.parse("e2e.yaml", yaml, n -> null);
    server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());
  }

  @AfterAll
  static void stop() {
    server.close();
    receiver.close();
  }

  static long received(String path, String bodyPart) {
    return receiver.received().stream()
        .filter(r -> r.path().equals(path) && r.body().contains(bodyPart))
        .count();
  }

  @Test
  void anEventIsDeliveredOnceWithItsIdempotencyKeyHowEverOftenItIsSent() {
    HttpResponse<String> first = http.post("/hooks/orders", "{\"id\":\"ord-1\",\"total\":5}");
    HttpResponse<String> second = http.post("/hooks/orders", "{\"id\":\"ord-1\",\"total\":5}");
    HttpResponse<String> third = http.post("/hooks/orders", "{\"total\":5,\"id\":\"ord-1\"}");

    assertThat(first.statusCode()).isEqualTo(202);
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(third.statusCode()).isEqualTo(200);
    assertThat(receiver.received())
        .filteredOn(r -> r.body().contains("ord-1"))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.path()).isEqualTo("/orders");
              assertThat(r.idempotencyKey()).matches("orders:[0-9a-f]{64}");
              assertThat(r.contentType()).startsWith("application/json");
              assertThat(r.body()).isEqualTo("{\"id\":\"ord-1\",\"total\":5}");
            });
  }

  /** Issue 8: ids that share a double are two orders; a number outside the range is refused. */
  @Test
  void numericIdsKeepTheirExactValueAndJsonType() {
    HttpResponse<String> first = http.post("/hooks/orders", "{\"id\":820982911946154508}");
    HttpResponse<String> next = http.post("/hooks/orders", "{\"id\":820982911946154509}");
    HttpResponse<String> respelled = http.post("/hooks/orders", "{\"id\":8.20982911946154509e17}");
    HttpResponse<String> asString = http.post("/hooks/orders", "{\"id\":\"820982911946154508\"}");
    HttpResponse<String> huge = http.post("/hooks/orders", "{\"id\":\"ord-n\",\"n\":1e400}");
    HttpResponse<String> tiny = http.post("/hooks/orders", "{\"id\":\"ord-n\",\"n\":1e-400}");

    assertThat(first.statusCode()).isEqualTo(202);
    assertThat(next.statusCode()).isEqualTo(202);
    assertThat(respelled.statusCode()).isEqualTo(200);
    assertThat(asString.statusCode()).isEqualTo(202);
    // Refused at the body check (I-JSON), before any key is derived: never rounded to 0 or
    // infinity.
    for (HttpResponse<String> refused : List.of(huge, tiny)) {
      assertThat(refused.statusCode()).isEqualTo(400);
      assertThat(refused.body())
          .startsWith("{\"error\":\"malformed_json\"")
          .contains("send it as a string");
    }
    assertThat(received("/orders", "820982911946154509")).isEqualTo(1);
    assertThat(received("/orders", "ord-n")).isZero();
  }

  /** Issue 8: a 100-digit integer id is keyed by all its digits. */
  @Test
  void aHundredDigitIdIsKeyedExactly() {
    String id = "7".repeat(100);
    String neighbour = "7".repeat(99) + "8";

    assertThat(http.post("/hooks/orders", "{\"id\":" + id + "}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":" + neighbour + "}").statusCode())
        .isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":" + id + "}").statusCode()).isEqualTo(200);
  }

  @Test
  void aDownstreamFailureReleasesTheKeySoTheSendersRetryIsDelivered() {
    // given a downstream down for longer than the pipeline retries (2 attempts)
    receiver.failNext(2);

    HttpResponse<String> failed = http.post("/hooks/orders", "{\"id\":\"ord-down\"}");
    HttpResponse<String> retried = http.post("/hooks/orders", "{\"id\":\"ord-down\"}");

    assertThat(failed.statusCode()).isEqualTo(502);
    assertThat(failed.body()).startsWith("{\"error\":\"delivery_failed\"");
    assertThat(retried.statusCode()).isEqualTo(202);
    assertThat(received("/orders", "ord-down")).isEqualTo(1);
  }

  @Test
  void theJqTransformShapesWhatIsDelivered() {
    http.post("/hooks/trimmed", "{\"id\":\"t-1\",\"total_price\":\"9.50\",\"noise\":[1,2,3]}");

    assertThat(receiver.received())
        .filteredOn(r -> r.path().equals("/trimmed"))
        .extracting(Receiver.Received::body)
        .contains("{\"id\":\"t-1\",\"total\":\"9.50\"}");
  }

  @Test
  void replayReturnsTheDownstreamsFirstAnswerToDuplicates() {
    receiver.respond(201, "{\"payment\":\"captured\"}");
    HttpResponse<String> first =
        http.post("/hooks/payments", "{\"account\":\"a1\",\"payment\":\"p1\",\"amount\":10}");
    receiver.respond(200, "{\"ok\":true}");
    HttpResponse<String> again =
        http.post("/hooks/payments", "{\"amount\":10,\"payment\":\"p1\",\"account\":\"a1\"}");
    HttpResponse<String> reused =
        http.post("/hooks/payments", "{\"account\":\"a1\",\"payment\":\"p1\",\"amount\":11}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("{\"payment\":\"captured\"}");
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.body()).isEqualTo("{\"payment\":\"captured\"}");
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(received("/payments", "\"p1\"")).isEqualTo(1);
  }

  // --- Signatures, built the way each provider documents them. ---

  static byte[] hmac(byte[] key, String content) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(content.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void stripeSignaturesAreVerifiedAndTheEventIdIsTheKey() {
    String body = "{\"id\":\"evt_1\",\"type\":\"charge.succeeded\"}";
    long now = System.currentTimeMillis() / 1000;
    String good =
        "t=" + now + ",v1=" + HexFormat.of().formatHex(hmac(utf8(STRIPE_SECRET), now + "." + body));
    long old = now - 600;
    String stale =
        "t=" + old + ",v1=" + HexFormat.of().formatHex(hmac(utf8(STRIPE_SECRET), old + "." + body));
    String forged =
        "t=" + now + ",v1=" + HexFormat.of().formatHex(hmac(utf8("wrong"), now + "." + body));

    assertThat(http.post("/hooks/stripe", body, "Stripe-Signature", stale).statusCode())
        .isEqualTo(401);
    assertThat(http.post("/hooks/stripe", body, "Stripe-Signature", forged).statusCode())
        .isEqualTo(401);
    assertThat(http.post("/hooks/stripe", body).statusCode()).isEqualTo(401);
    assertThat(http.post("/hooks/stripe", body, "Stripe-Signature", good).statusCode())
        .isEqualTo(202);
    assertThat(http.post("/hooks/stripe", body, "Stripe-Signature", good).statusCode())
        .isEqualTo(200);
    assertThat(received("/signed", "evt_1")).isEqualTo(1);
  }

  @Test
  void githubSignaturesAreVerifiedAndTheDeliveryHeaderIsTheKey() {
    String body = "{\"ref\":\"refs/heads/main\",\"after\":\"abc\"}";
    String sig = "sha256=" + HexFormat.of().formatHex(hmac(utf8(GITHUB_SECRET), body));

    HttpResponse<String> bad =
        http.post(
            "/hooks/github", body, "X-Hub-Signature-256", "sha256=00", "X-GitHub-Delivery", "d-1");
    HttpResponse<String> ok =
        http.post("/hooks/github", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "d-1");
    HttpResponse<String> redelivered =
        http.post("/hooks/github", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "d-1");
    HttpResponse<String> noDelivery = http.post("/hooks/github", body, "X-Hub-Signature-256", sig);

    assertThat(bad.statusCode()).isEqualTo(401);
    assertThat(ok.statusCode()).isEqualTo(202);
    assertThat(redelivered.statusCode()).isEqualTo(200);
    assertThat(noDelivery.statusCode()).isEqualTo(400);
    assertThat(noDelivery.body()).contains("X-GitHub-Delivery");
  }

  @Test
  void shopifySignaturesAreVerifiedAndTheWebhookIdIsTheKey() {
    String body = "{\"id\":820982911946154508,\"total_price\":\"1.00\"}";
    String sig = Base64.getEncoder().encodeToString(hmac(utf8(SHOPIFY_SECRET), body));

    assertThat(
            http.post(
                    "/hooks/shopify",
                    body,
                    "X-Shopify-Hmac-Sha256",
                    "AAAA",
                    "X-Shopify-Webhook-Id",
                    "w-1")
                .statusCode())
        .isEqualTo(401);
    assertThat(
            http.post(
                    "/hooks/shopify",
                    body,
                    "X-Shopify-Hmac-Sha256",
                    sig,
                    "X-Shopify-Webhook-Id",
                    "w-1")
                .statusCode())
        .isEqualTo(202);
    assertThat(
            http.post(
                    "/hooks/shopify",
                    body,
                    "X-Shopify-Hmac-Sha256",
                    sig,
                    "X-Shopify-Webhook-Id",
                    "w-1")
                .statusCode())
        .isEqualTo(200);
  }

  @Test
  void standardWebhooksSignaturesAreVerifiedWithTheirTimestamp() {
    String body = "{\"type\":\"user.created\"}";
    long now = System.currentTimeMillis() / 1000;
    String sig =
        "v1," + Base64.getEncoder().encodeToString(hmac(STANDARD_KEY, "msg_1." + now + "." + body));
    long old = now - 3600;
    String staleSig =
        "v1," + Base64.getEncoder().encodeToString(hmac(STANDARD_KEY, "msg_2." + old + "." + body));

    HttpResponse<String> ok =
        http.post(
            "/hooks/standard",
            body,
            "webhook-id",
            "msg_1",
            "webhook-timestamp",
            Long.toString(now),
            "webhook-signature",
            sig);
    HttpResponse<String> stale =
        http.post(
            "/hooks/standard",
            body,
            "webhook-id",
            "msg_2",
            "webhook-timestamp",
            Long.toString(old),
            "webhook-signature",
            staleSig);

    assertThat(ok.statusCode()).isEqualTo(202);
    assertThat(stale.statusCode()).isEqualTo(401);
    assertThat(stale.body()).startsWith("{\"error\":\"invalid_signature\"");
  }
}
