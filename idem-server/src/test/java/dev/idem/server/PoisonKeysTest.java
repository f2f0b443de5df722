package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 11, poison keys with sync delivery: an event that keeps failing blocks only its own
 * ordering key (backoff between its attempts, later events of the key answered 503), then after
 * {@code ordering.max_attempts} is given up ({@code dead_letter}) or blocks the key until an
 * operator skips or retries it ({@code block}).
 */
class PoisonKeysTest {
  private static final String TOKEN = "poison-admin-token";
  private static final ObjectMapper JSON = new ObjectMapper();

  Receiver receiver;
  IdemServer server;
  Http http;

  @BeforeEach
  void start() {
    receiver = new Receiver();
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0, admin_token: %s }
        store: { type: memory }
        pipelines:
          - id: moving
            source: { webhook: { path: /hooks/moving } }
            dedup: { key: id }
            ordering: { key: customer, max_attempts: 2 }
            deliver: { retries: 0, backoff: 50ms, max_backoff: 50ms, http: { url: "%s" } }
          - id: slow
            source: { webhook: { path: /hooks/slow } }
            dedup: { key: id }
            ordering: { key: customer, max_attempts: 3 }
            deliver: { retries: 0, backoff: 1h, max_backoff: 1h, http: { url: "%s" } }
          - id: blocking
            source: { webhook: { path: /hooks/blocking } }
            dedup: { key: id }
            ordering: { key: customer, max_attempts: 2, on_failure: block }
            deliver: { retries: 0, backoff: 50ms, max_backoff: 50ms, http: { url: "%s" } }
        """
            .formatted(
                TOKEN, receiver.uri("/moving"), receiver.uri("/slow"), receiver.uri("/blocking"));
    IdemConfig config = ConfigLoader.parse("poison.yaml", yaml, n -> null);
    server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());
  }

  @AfterEach
  void stop() {
    server.close();
    receiver.close();
  }

  static String event(String id, String customer) {
    return "{\"id\":\"%s\",\"customer\":\"%s\"}".formatted(id, customer);
  }

  HttpResponse<String> admin(String method, String path) {
    return http.method(method, path, "Authorization", "Bearer " + TOKEN);
  }

  static void pause(long millis) throws InterruptedException {
    Thread.sleep(millis); // past the 50 ms backoff: the schedule of the test, not a measurement
  }

  @Test
  void aFailingEventHoldsOnlyItsKeyThenIsGivenUpAndTheKeyMovesOn() throws Exception {
    receiver.failNext(1);
    HttpResponse<String> first = http.post("/hooks/moving", event("a1", "alice"));
    assertThat(first.statusCode()).isEqualTo(502);
    assertThat(first.body()).contains("backs off");
    // Another key is not affected; alice's next event waits behind a1.
    assertThat(http.post("/hooks/moving", event("b1", "bob")).statusCode()).isEqualTo(202);
    HttpResponse<String> behind = http.post("/hooks/moving", event("a2", "alice"));
    assertThat(behind.statusCode()).isEqualTo(503);
    assertThat(behind.body()).contains("ordering_key_blocked");
    assertThat(behind.headers().firstValue("Retry-After")).isPresent();
    List<JsonNode> listed = list("moving");
    assertThat(listed)
        .singleElement()
        .satisfies(n -> assertThat(n.get("attempts").asInt()).isEqualTo(1));

    pause(120);
    receiver.failNext(1);
    HttpResponse<String> last = http.post("/hooks/moving", event("a1", "alice"));
    assertThat(last.statusCode()).isEqualTo(502);
    assertThat(last.body()).contains("given up");
    assertThat(list("moving")).isEmpty();
    // The key moved on: a2 is delivered.
    assertThat(http.post("/hooks/moving", event("a2", "alice")).statusCode()).isEqualTo(202);
    assertThat(receiver.received())
        .extracting(Receiver.Received::body)
        .containsExactly(event("b1", "bob"), event("a2", "alice"));
  }

  @Test
  void theFailingEventBacksOffAndItsSuccessAfterAnOperatorRetryClearsTheKey() throws Exception {
    receiver.failNext(1);
    assertThat(http.post("/hooks/slow", event("c1", "carol")).statusCode()).isEqualTo(502);
    // Its backoff is an hour: a resend now is told to come back later.
    HttpResponse<String> early = http.post("/hooks/slow", event("c1", "carol"));
    assertThat(early.statusCode()).isEqualTo(503);
    assertThat(early.body()).contains("ordering_key_backoff");
    assertThat(early.headers().firstValue("Retry-After"))
        .hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isGreaterThan(60));
    String key = list("slow").get(0).get("ordering_key").asText();
    assertThat(admin("POST", "/admin/pipelines/slow/blocked-keys/" + key + "/retry").statusCode())
        .isEqualTo(200);
    assertThat(http.post("/hooks/slow", event("c1", "carol")).statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/slow", event("c2", "carol")).statusCode()).isEqualTo(202);
    assertThat(list("slow")).isEmpty();
  }

  @Test
  void blockKeepsTheKeyBlockedUntilAnOperatorRetriesOrSkipsIt() throws Exception {
    receiver.failNext(1);
    assertThat(http.post("/hooks/blocking", event("d1", "dave")).statusCode()).isEqualTo(502);
    pause(120);
    receiver.failNext(1);
    HttpResponse<String> second = http.post("/hooks/blocking", event("d1", "dave"));
    assertThat(second.statusCode()).isEqualTo(502);
    assertThat(second.body()).contains("blocked until an operator");
    pause(120);
    // Blocked: neither the failing event nor a later one passes, however long the sender waits.
    assertThat(http.post("/hooks/blocking", event("d1", "dave")).body())
        .contains("ordering_key_blocked");
    assertThat(http.post("/hooks/blocking", event("d2", "dave")).statusCode()).isEqualTo(503);
    JsonNode blocked = list("blocking").get(0);
    assertThat(blocked.get("blocked").asBoolean()).isTrue();
    String key = blocked.get("ordering_key").asText();

    // Retry: the attempts start again and the sender's next resend is processed.
    HttpResponse<String> retried =
        admin("POST", "/admin/pipelines/blocking/blocked-keys/" + key + "/retry");
    assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
    receiver.failNext(2);
    assertThat(http.post("/hooks/blocking", event("d1", "dave")).statusCode()).isEqualTo(502);
    pause(120);
    assertThat(http.post("/hooks/blocking", event("d1", "dave")).statusCode()).isEqualTo(502);
    assertThat(list("blocking"))
        .singleElement()
        .satisfies(n -> assertThat(n.get("blocked").asBoolean()).isTrue());

    // Skip: the event is given up (its resends are duplicates) and the key moves on.
    HttpResponse<String> skipped =
        admin("POST", "/admin/pipelines/blocking/blocked-keys/" + key + "/skip");
    assertThat(skipped.statusCode()).as(skipped.body()).isEqualTo(200);
    assertThat(skipped.body()).contains("\"skipped\":true");
    assertThat(http.post("/hooks/blocking", event("d1", "dave")).statusCode()).isEqualTo(200);
    assertThat(http.post("/hooks/blocking", event("d2", "dave")).statusCode()).isEqualTo(202);
    assertThat(receiver.received())
        .extracting(Receiver.Received::body)
        .containsExactly(event("d2", "dave"));
    assertThat(
            admin("POST", "/admin/pipelines/blocking/blocked-keys/" + key + "/skip").statusCode())
        .isEqualTo(404);
    assertThat(admin("POST", "/admin/pipelines/blocking/blocked-keys/nothex/skip").statusCode())
        .isEqualTo(400);
  }

  private List<JsonNode> list(String pipeline) throws Exception {
    HttpResponse<String> r = admin("GET", "/admin/pipelines/" + pipeline + "/blocked-keys");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    java.util.ArrayList<JsonNode> out = new java.util.ArrayList<>();
    JSON.readTree(r.body()).get("blocked_keys").forEach(out::add);
    return out;
  }
}
