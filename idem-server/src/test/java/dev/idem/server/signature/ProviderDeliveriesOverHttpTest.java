package dev.idem.server.signature;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Deliveries shaped as the providers really send them (issue 8 §2), over real HTTP into the service
 * built from YAML with its real verifiers, and out to a real receiver: Svix's own header names,
 * Shopify's headers without the X- prefix, GitHub's form-encoded deliveries, and two secrets during
 * a roll.
 */
class ProviderDeliveriesOverHttpTest {
  static final byte[] NEW_KEY = "svix-new-signing-key-of-32-bytes".getBytes(StandardCharsets.UTF_8);
  static final byte[] OLD_KEY = "svix-old-signing-key-of-32-bytes".getBytes(StandardCharsets.UTF_8);
  static final String GITHUB_NEW = "github-new-secret";
  static final String GITHUB_OLD = "github-old-secret";
  static final String SHOPIFY_SECRET = "shpss_http_test_secret";

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
          - id: svix
            source:
              webhook:
                path: /hooks/svix
                signature: { scheme: standard, secrets: ["whsec_%1$s", "whsec_%2$s"] }
            dedup: {}
            deliver: { http: { url: "%3$s" } }
          - id: shopify
            source:
              webhook: { path: /hooks/shopify, signature: { scheme: shopify, secret: %4$s } }
            dedup: {}
            deliver: { http: { url: "%5$s" } }
          - id: github
            source:
              webhook:
                path: /hooks/github
                signature: { scheme: github, secrets: [%6$s, %7$s] }
            dedup: {}
            transform: { jq: '{action: .action, number: .number}' }
            deliver: { http: { url: "%8$s" } }
          - id: github-keyed
            source:
              webhook: { path: /hooks/github-keyed, signature: { scheme: github, secret: %6$s } }
            dedup: { key: source.number }
            deliver: { http: { url: "%9$s" } }
        """
            .formatted(
                Base64.getEncoder().encodeToString(NEW_KEY),
                Base64.getEncoder().encodeToString(OLD_KEY),
                receiver.uri("/svix"),
                SHOPIFY_SECRET,
                receiver.uri("/shopify"),
                GITHUB_NEW,
                GITHUB_OLD,
                receiver.uri("/github"),
                receiver.uri("/github-keyed"));
    IdemConfig config = ConfigLoader.parse("providers.yaml", yaml, n -> null);
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

  static List<Receiver.Received> received(String path) {
    return receiver.received().stream().filter(r -> r.path().equals(path)).toList();
  }

  @Test
  void aSvixDeliveryWithSvixHeadersIsAcceptedOnceAndItsSvixIdIsTheKey() {
    // Given a delivery as Svix sends it by default, signed with the old secret during a roll
    String body = "{\"type\":\"invoice.paid\",\"data\":{\"id\":\"in_1\"}}";
    long now = System.currentTimeMillis() / 1000;
    String id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
    String sig = "v1," + base64(Requests.hmac(OLD_KEY, id + "." + now + "." + body));
    String[] headers = {"svix-id", id, "svix-timestamp", Long.toString(now), "svix-signature", sig};

    // When it arrives twice
    HttpResponse<String> first = http.post("/hooks/svix", body, headers);
    HttpResponse<String> again = http.post("/hooks/svix", body, headers);
    HttpResponse<String> forged =
        http.post(
            "/hooks/svix",
            body,
            "svix-id",
            "msg_forged",
            "svix-timestamp",
            Long.toString(now),
            "svix-signature",
            "v1," + base64(Requests.hmac("wrong".getBytes(), "msg_forged." + now + "." + body)));

    // Then it is delivered once, the resend is a duplicate, and a forgery is 401
    assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(again.body()).contains("\"duplicate\":true");
    assertThat(forged.statusCode()).isEqualTo(401);
    assertThat(forged.body()).contains("svix-signature");
    assertThat(received("/svix")).extracting(Receiver.Received::body).containsExactly(body);
  }

  @Test
  void shopifysUnprefixedHeadersAreVerifiedAndTheirWebhookIdIsTheKey() {
    String body = "{\"id\":820982911946154508,\"total_price\":\"9.99\"}";
    String sig = base64(Requests.hmac(SHOPIFY_SECRET.getBytes(StandardCharsets.UTF_8), body));

    HttpResponse<String> first =
        http.post(
            "/hooks/shopify",
            body,
            "shopify-hmac-sha256",
            sig,
            "shopify-webhook-id",
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    HttpResponse<String> retried =
        http.post(
            "/hooks/shopify",
            body,
            "shopify-hmac-sha256",
            sig,
            "shopify-webhook-id",
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");

    assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
    assertThat(retried.statusCode()).isEqualTo(200);
    assertThat(received("/shopify")).hasSize(1);
  }

  @Test
  void aGitHubFormDeliveryIsVerifiedOverTheFormAndItsPayloadIsTheEvent() {
    // Given a webhook whose content type is set to application/x-www-form-urlencoded in GitHub,
    // signed with the new secret of a roll
    String json = "{\"action\":\"opened\",\"number\":7,\"title\":\"a+b & c\"}";
    String form = "payload=" + URLEncoder.encode(json, StandardCharsets.UTF_8);
    String sig = "sha256=" + hex(Requests.hmac(GITHUB_NEW.getBytes(StandardCharsets.UTF_8), form));
    String[] headers = {
      "Content-Type", "application/x-www-form-urlencoded",
      "X-GitHub-Event", "pull_request",
      "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958",
      "X-Hub-Signature-256", sig
    };

    HttpResponse<String> first = http.post("/hooks/github", form, headers);
    HttpResponse<String> redelivered = http.post("/hooks/github", form, headers);

    // Then the transform read the JSON in payload, and the redelivery is a duplicate
    assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
    assertThat(redelivered.statusCode()).isEqualTo(200);
    assertThat(received("/github"))
        .extracting(Receiver.Received::body)
        .containsExactly("{\"action\":\"opened\",\"number\":7}");
  }

  @Test
  void aGitHubFormIsNotAuthenticatedByTheSignatureOfItsPayloadAlone() {
    String json = "{\"action\":\"closed\",\"number\":8}";
    String form = "payload=" + URLEncoder.encode(json, StandardCharsets.UTF_8);
    String sigOfJson =
        "sha256=" + hex(Requests.hmac(GITHUB_NEW.getBytes(StandardCharsets.UTF_8), json));

    HttpResponse<String> r =
        http.post(
            "/hooks/github",
            form,
            "Content-Type",
            "application/x-www-form-urlencoded",
            "X-GitHub-Delivery",
            "d-json-sig",
            "X-Hub-Signature-256",
            sigOfJson);

    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(received("/github")).noneMatch(x -> x.body().contains("closed"));
  }

  @Test
  void aKeyRuleReadsTheFormsPayloadAndTheDeliveredBodyIsThePayload() {
    String json = "{\"action\":\"labeled\",\"number\":42}";
    String form = "payload=" + URLEncoder.encode(json, StandardCharsets.UTF_8);
    String sig = "sha256=" + hex(Requests.hmac(GITHUB_NEW.getBytes(StandardCharsets.UTF_8), form));
    HttpResponse<String> first =
        http.post(
            "/hooks/github-keyed",
            form,
            "Content-Type",
            "application/x-www-form-urlencoded; charset=utf-8",
            "X-Hub-Signature-256",
            sig);
    // The same number in a JSON delivery is the same key
    String jsonSig =
        "sha256=" + hex(Requests.hmac(GITHUB_NEW.getBytes(StandardCharsets.UTF_8), json));
    HttpResponse<String> asJson =
        http.post(
            "/hooks/github-keyed",
            json,
            "Content-Type",
            "application/json",
            "X-Hub-Signature-256",
            jsonSig);

    assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
    assertThat(asJson.statusCode()).isEqualTo(200);
    assertThat(received("/github-keyed")).extracting(Receiver.Received::body).containsExactly(json);
  }

  static String base64(byte[] b) {
    return Base64.getEncoder().encodeToString(b);
  }

  static String hex(byte[] b) {
    return HexFormat.of().formatHex(b);
  }
}
