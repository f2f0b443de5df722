package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.server.support.TestParts;
import dev.idem.server.support.TestService;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class AdminApiTest {
  static final String TOKEN = "admin-token-for-tests-42";
  static final String YAML =
      """
      store: { type: memory }
      pipelines:
        - id: orders
          source: { webhook: { path: /hooks/orders } }
          dedup: { key: source.id, window: 1h }
          deliver: { stdout: {} }
        - id: plain
          source: { webhook: { path: /hooks/plain } }
          deliver: { stdout: {} }
      """;
  static final ObjectMapper JSON = new ObjectMapper();
  static TestService service;

  @BeforeAll
  static void start() {
    service = TestService.start(YAML, TOKEN);
  }

  @AfterAll
  static void stop() {
    service.close();
  }

  static HttpResponse<String> admin(String method, String path) {
    return service.http.method(method, path, "Authorization", "Bearer " + TOKEN);
  }

  static JsonNode json(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body());
  }

  @Test
  void withoutTheTokenItIs401AndNothingLeaks() {
    HttpResponse<String> none = service.http.get("/admin/stats");
    HttpResponse<String> wrong =
        service.http.get("/admin/stats", "Authorization", "Bearer not-the-token");
    HttpResponse<String> basic =
        service.http.get("/admin/stats", "Authorization", "Basic " + TOKEN);

    for (HttpResponse<String> r : java.util.List.of(none, wrong, basic)) {
      assertThat(r.statusCode()).isEqualTo(401);
      assertThat(r.body()).startsWith("{\"error\":\"unauthorized\"").doesNotContain(TOKEN);
      assertThat(r.headers().firstValue("WWW-Authenticate"))
          .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
    }
  }

  @Test
  void aKeyIsInspectedByItsRawValueForgottenAndThenNewAgain() throws Exception {
    // given a delivered event
    service.http.post("/hooks/orders", "{\"id\":\"ord/7 x\"}");

    // when it is inspected by its raw value (URL-encoded, with a slash and a space)
    JsonNode committed = json(admin("GET", "/admin/pipelines/orders/keys/ord%2F7%20x"));

    // then it is committed, with times
    assertThat(committed.get("state").asText()).isEqualTo("committed");
    assertThat(committed.get("digest").asText()).isEqualTo(TestParts.keyOf("ord/7 x").toHex());
    assertThat(committed.get("committed_at").asText()).matches("\\d{4}-\\d\\d-\\d\\dT.*Z");
    assertThat(committed.get("expires_at").asText()).matches("\\d{4}-\\d\\d-\\d\\dT.*Z");

    // and by its digest
    JsonNode byDigest =
        json(
            admin(
                "GET",
                "/admin/pipelines/orders/keys/"
                    + TestParts.keyOf("ord/7 x").toHex()
                    + "?form=digest"));
    assertThat(byDigest.get("state").asText()).isEqualTo("committed");

    // when it is forgotten
    JsonNode forgotten = json(admin("DELETE", "/admin/pipelines/orders/keys/ord%2F7%20x"));

    // then it is absent and the next event with it is new
    assertThat(forgotten.get("forgotten").asBoolean()).isTrue();
    assertThat(json(admin("GET", "/admin/pipelines/orders/keys/ord%2F7%20x")).get("state").asText())
        .isEqualTo("absent");
    assertThat(service.http.post("/hooks/orders", "{\"id\":\"ord/7 x\"}").statusCode())
        .isEqualTo(202);
  }

  @Test
  void clearForgetsEveryKeyOfThePipeline() throws Exception {
    service.http.post("/hooks/orders", "{\"id\":\"c1\"}");
    service.http.post("/hooks/orders", "{\"id\":\"c2\"}");

    JsonNode cleared = json(admin("DELETE", "/admin/pipelines/orders/keys"));

    assertThat(cleared.get("removed").asLong()).isGreaterThanOrEqualTo(2);
    assertThat(service.http.post("/hooks/orders", "{\"id\":\"c1\"}").statusCode()).isEqualTo(202);
    assertThat(service.http.post("/hooks/orders", "{\"id\":\"c2\"}").statusCode()).isEqualTo(202);
  }

  @Test
  void statsCountDecisionsPerPipeline() throws Exception {
    service.http.post("/hooks/orders", "{\"id\":\"s1\"}");
    service.http.post("/hooks/orders", "{\"id\":\"s1\"}");

    JsonNode stats = json(admin("GET", "/admin/stats"));

    JsonNode orders = stats.get("pipelines").get("orders");
    assertThat(orders.get("pass").asLong()).isGreaterThanOrEqualTo(1);
    assertThat(orders.get("duplicate").asLong()).isGreaterThanOrEqualTo(1);
    assertThat(orders.get("committed").asLong()).isGreaterThanOrEqualTo(1);
    assertThat(stats.get("pipelines").has("plain")).isTrue();
  }

  @Test
  void unknownPipelinesEndpointsAndMethodsAreAnswered() {
    assertThat(admin("GET", "/admin/pipelines/nope/keys/x").statusCode()).isEqualTo(404);
    assertThat(admin("GET", "/admin/nothing").statusCode()).isEqualTo(404);
    HttpResponse<String> post = admin("POST", "/admin/stats");
    assertThat(post.statusCode()).isEqualTo(405);
    assertThat(post.headers().firstValue("Allow")).hasValue("GET");
    assertThat(admin("GET", "/admin/pipelines/plain/keys/x").body()).contains("\"no_dedup\"");
    assertThat(admin("GET", "/admin/pipelines/orders/dead-letters").body())
        .contains("\"no_outbox\"");
    assertThat(admin("GET", "/admin/pipelines/orders/keys/zz?form=digest").statusCode())
        .isEqualTo(400);
  }

  @Test
  void withoutAConfiguredTokenTheAdminApiIsOff() {
    try (TestService off = TestService.start(YAML, null)) {
      HttpResponse<String> r =
          off.http.get("/admin/stats", "Authorization", "Bearer anything-at-all");

      assertThat(r.statusCode()).isEqualTo(404);
      assertThat(r.body()).startsWith("{\"error\":\"admin_disabled\"");
    }
  }
}
