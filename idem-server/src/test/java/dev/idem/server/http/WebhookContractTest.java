package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Deduplicator;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceRuntime;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.deliver.Sink;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.webhook.WebhookSource;
import dev.idem.server.support.Http;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import dev.idem.spi.KeyState;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The webhook HTTP contract over real HTTP, with the pipeline wired from test parts (a reference
 * store, a recording sink): every status code and body the contract names.
 */
class WebhookContractTest {
  static final String TOKEN = "test-admin-token-0123456789";
  static final String ACCEPTED = "{\"accepted\":true,\"duplicate\":false}";
  static final String DUPLICATE = "{\"accepted\":true,\"duplicate\":true}";

  static final SwitchableStore store = new SwitchableStore();
  static final RecordingSink sink = new RecordingSink();
  static final RecordingSink replaySink = new RecordingSink();
  static final RecordingSink signedSink = new RecordingSink();
  static final BlockingSink slowSink = new BlockingSink();
  static IdemServer server;
  static Http http;

  /** Blocks the first delivery until released. */
  static final class BlockingSink implements Sink {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public DeliveryOutcome deliver(Delivery delivery) {
      entered.countDown();
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return new DeliveryOutcome.Delivered(200, null, null);
    }

    @Override
    public String describe() {
      return "blocking";
    }

    @Override
    public void close() {}
  }

  @BeforeAll
  static void start() {
    IdemConfig config =
        ConfigLoader.parse(
            "contract.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /hooks/p, max_body: 1KiB, max_depth: 4 } }
                dedup: { key: source.id }
                deliver: { retries: 1, stdout: {} }
              - id: r
                source: { webhook: { path: /hooks/r } }
                dedup: { key: source.id, mode: replay }
                deliver: { stdout: {} }
              - id: s
                source:
                  webhook:
                    path: /hooks/s
                    signature: { scheme: standard, secret: whsec_c2VjcmV0 }
                dedup: { key: source.id }
                deliver: { stdout: {} }
              - id: slow
                source: { webhook: { path: /hooks/slow } }
                dedup: { key: source.id, lease: 1m }
                deliver: { stdout: {} }
            """,
            name -> null);
    IdemMetrics metrics = new IdemMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    List<Pipeline> pipelines =
        List.of(
            pipeline(config, "p", sink, metrics).build(),
            pipeline(config, "r", replaySink, metrics)
                .fingerprints(b -> Fingerprint.sha256(b))
                .build(),
            pipeline(config, "s", signedSink, metrics).build(),
            pipeline(config, "slow", slowSink, metrics).build());
    List<WebhookSource> webhooks =
        pipelines.stream()
            .map(
                p ->
                    p.id().equals("s")
                        ? new WebhookSource(
                            p,
                            TestParts.headerVerifier(),
                            null,
                            TimeSource.system(),
                            WebhookSource.DEFAULT_MAX_REJECTION_LINES_PER_SECOND)
                        : WebhookSource.unsigned(p))
            .toList();
    ServiceRuntime runtime =
        new ServiceRuntime(
            pipelines,
            webhooks,
            List.of(),
            List.of(store),
            List.of(),
            List.of(),
            metrics,
            (PrometheusMeterRegistry) metrics.registry(),
            payload -> {
              throw new IllegalStateException("no outbox in this test");
            });
    server =
        IdemServer.start(
            new ServerSettings("127.0.0.1", 0, TOKEN, 16, Duration.ofSeconds(5), null), runtime);
    http = new Http(server.uri());
  }

  static Pipeline.Builder pipeline(IdemConfig config, String id, Sink sink, IdemMetrics metrics) {
    PipelineSettings p = config.pipeline(id).orElseThrow();
    Deduplicator dedup =
        Deduplicator.builder(store, Scope.of(id))
            .config(p.dedup().config())
            .listener(metrics.dedupListener())
            .build();
    return Pipeline.builder(p)
        .keys(TestParts.idField())
        .dedup(dedup, store)
        .meters(metrics.pipeline(id))
        .deliverer(TestParts.retrying(sink, p.deliver().retry().retries()));
  }

  @AfterAll
  static void stop() {
    slowSink.release.countDown();
    server.close();
  }

  static KeyState state(String pipeline, String id) {
    return store.inspect(Scope.of(pipeline), TestParts.keyOf(id), System.currentTimeMillis());
  }

  @Test
  void aNewEventIsDeliveredOnceWithItsIdempotencyKeyAndDuplicatesAreNot() {
    // when the same event arrives twice
    HttpResponse<String> first = http.post("/hooks/p", "{\"id\":\"evt-1\",\"n\":1}");
    HttpResponse<String> second = http.post("/hooks/p", "{\"id\":\"evt-1\",\"n\":1}");

    // then the first is accepted and delivered, the second is a duplicate and is not
    assertThat(first.statusCode()).isEqualTo(202);
    assertThat(first.body()).isEqualTo(ACCEPTED);
    assertThat(first.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(second.body()).isEqualTo(DUPLICATE);
    List<Delivery> delivered =
        sink.delivered().stream()
            .filter(d -> new String(d.body(), StandardCharsets.UTF_8).contains("evt-1"))
            .toList();
    assertThat(delivered)
        .singleElement()
        .satisfies(
            d -> assertThat(d.idempotencyKey()).isEqualTo("p:" + TestParts.keyOf("evt-1").toHex()));
    assertThat(state("p", "evt-1")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aSecondEventWhileTheFirstIsInFlightIs409WithRetryAfter() throws Exception {
    // given a delivery that is still in progress
    CompletableFuture<HttpResponse<String>> first = http.postAsync("/hooks/slow", "{\"id\":\"k\"}");
    assertThat(slowSink.entered.await(10, TimeUnit.SECONDS)).isTrue();

    // when the same key arrives meanwhile
    HttpResponse<String> second = http.post("/hooks/slow", "{\"id\":\"k\"}");

    // then it is turned away; the first completes normally
    assertThat(second.statusCode()).isEqualTo(409);
    assertThat(second.body()).startsWith("{\"error\":\"in_flight\",\"message\":");
    assertThat(second.headers().firstValue("Retry-After")).isPresent();
    slowSink.release.countDown();
    assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(202);
  }

  @Test
  void replayModeReturnsTheStoredAnswerAndRejectsAReusedKeyWithAnotherPayload() {
    // given a downstream that answers with a body
    replaySink.respondWith("{\"order\":\"created\",\"n\":7}");
    HttpResponse<String> first = http.post("/hooks/r", "{\"id\":\"pay-1\",\"amount\":5}");
    replaySink.respondWith("{\"order\":\"other\"}");

    // when the same request is sent again, and then the key with another payload
    HttpResponse<String> again = http.post("/hooks/r", "{\"id\":\"pay-1\",\"amount\":5}");
    HttpResponse<String> reused = http.post("/hooks/r", "{\"id\":\"pay-1\",\"amount\":6}");

    // then the duplicate gets the first answer back and the reuse is a conflict
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("{\"order\":\"created\",\"n\":7}");
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.body()).isEqualTo("{\"order\":\"created\",\"n\":7}");
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.body()).startsWith("{\"error\":\"key_reused\",");
    assertThat(replaySink.delivered()).hasSize(1);
  }

  @Test
  void badRequestsAre400WithAnErrorCode() {
    assertThat(http.post("/hooks/p", "{\"n\":1}")).satisfies(r -> error(r, 400, "missing_key"));
    assertThat(http.post("/hooks/p", "{\"id\":\"  \"}"))
        .satisfies(r -> error(r, 400, "missing_key"));
    assertThat(http.post("/hooks/p", "{\"id\":")).satisfies(r -> error(r, 400, "malformed_json"));
    assertThat(http.post("/hooks/p", "")).satisfies(r -> error(r, 400, "malformed_json"));
    assertThat(http.post("/hooks/p", "{\"id\":\"a\"} {}"))
        .satisfies(r -> error(r, 400, "malformed_json"));
    assertThat(http.post("/hooks/p", "{\"id\":\"a\",\"id\":\"b\"}"))
        .satisfies(r -> error(r, 400, "duplicate_field"));
    assertThat(http.post("/hooks/p", "{\"id\":\"x\",\"a\":{\"b\":{\"c\":{\"d\":{}}}}}"))
        .satisfies(r -> error(r, 400, "nesting_too_deep"));
    assertThat(sink.bodies()).noneMatch(b -> b.contains("\"d\""));
  }

  @Test
  void aBadOrMissingSignatureIs401AndReservesNothing() {
    // when a signed pipeline gets a request without and with a wrong signature
    HttpResponse<String> missing = http.post("/hooks/s", "{\"id\":\"sig-1\"}");
    HttpResponse<String> wrong =
        http.post("/hooks/s", "{\"id\":\"sig-1\"}", "X-Test-Signature", "forged");

    // then both are 401 and the key was never reserved
    error(missing, 401, "invalid_signature");
    error(wrong, 401, "invalid_signature");
    assertThat(state("s", "sig-1")).isEqualTo(KeyState.ABSENT);
    assertThat(signedSink.delivered()).isEmpty();

    // and a correctly signed request then passes as new
    assertThat(
            http.post("/hooks/s", "{\"id\":\"sig-1\"}", "X-Test-Signature", "valid").statusCode())
        .isEqualTo(202);
  }

  @Test
  void aBodyOverTheLimitIs413WhetherDeclaredOrStreamed() {
    String big = "{\"id\":\"big\",\"pad\":\"" + "x".repeat(4096) + "\"}";

    HttpResponse<String> declared = http.post("/hooks/p", big);
    HttpResponse<String> streamed =
        http.postChunked("/hooks/p", big.getBytes(StandardCharsets.UTF_8));

    error(declared, 413, "body_too_large");
    error(streamed, 413, "body_too_large");
    assertThat(state("p", "big")).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void wrongMethodIs405WithAllowAndUnknownPathIs404() {
    HttpResponse<String> get = http.get("/hooks/p");
    HttpResponse<String> put = http.method("PUT", "/hooks/p");
    HttpResponse<String> unknown = http.post("/hooks/nope", "{\"id\":\"1\"}");

    error(get, 405, "method_not_allowed");
    assertThat(get.headers().firstValue("Allow")).hasValue("POST");
    error(put, 405, "method_not_allowed");
    error(unknown, 404, "not_found");
  }

  @Test
  void aFailedSyncDeliveryIs502AndReleasesTheKeySoTheRetryIsAccepted() {
    // given a downstream failing more often than the pipeline retries (1 retry = 2 attempts)
    sink.failNext(2);

    // when the event is sent, then resent
    HttpResponse<String> failed = http.post("/hooks/p", "{\"id\":\"fail-1\"}");
    KeyState afterFailure = state("p", "fail-1");
    HttpResponse<String> retried = http.post("/hooks/p", "{\"id\":\"fail-1\"}");

    // then the first answer says so, the key was released, and the resend is delivered
    error(failed, 502, "delivery_failed");
    assertThat(afterFailure).isEqualTo(KeyState.ABSENT);
    assertThat(retried.statusCode()).isEqualTo(202);
    assertThat(sink.bodies()).filteredOn(b -> b.contains("fail-1")).hasSize(1);
  }

  @Test
  void anUnavailableStoreIs503WithRetryAfterAndCommitsNothing() {
    // given a store that does not answer
    store.down(true);
    HttpResponse<String> r;
    HttpResponse<String> health;
    try {
      r = http.post("/hooks/p", "{\"id\":\"down-1\"}");
      health = http.get("/health");
    } finally {
      store.down(false);
    }

    // then the sender is told to retry, and nothing was delivered or recorded
    error(r, 503, "store_unavailable");
    assertThat(r.headers().firstValue("Retry-After")).hasValue("5");
    assertThat(health.statusCode()).isEqualTo(503);
    assertThat(health.body()).contains("\"status\":\"down\"");
    assertThat(sink.bodies()).noneMatch(b -> b.contains("down-1"));
    assertThat(state("p", "down-1")).isEqualTo(KeyState.ABSENT);
    assertThat(http.post("/hooks/p", "{\"id\":\"down-1\"}").statusCode()).isEqualTo(202);
  }

  @Test
  void healthAndMetricsNeedNoToken() {
    HttpResponse<String> health = http.get("/health");
    http.post("/hooks/p", "{\"id\":\"metered\"}");
    HttpResponse<String> metrics = http.get("/metrics");

    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body())
        .isEqualTo("{\"status\":\"up\",\"stores\":[{\"store\":\"switchable\",\"status\":\"up\"}]}");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains("idem_decisions_total{decision=\"pass\",pipeline=\"p\"}")
        .contains("idem_http_requests_total{pipeline=\"p\",status=\"202\"}")
        .contains("idem_store_seconds_bucket");
  }

  static void error(HttpResponse<String> r, int status, String code) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    assertThat(r.body()).startsWith("{\"error\":\"" + code + "\",\"message\":\"");
    assertThat(r.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
  }
}
