package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.server.deliver.TestReceiver.Answer;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class HttpSinkTest {
  private static final byte[] BODY =
      "{\"id\":\"o-1\",\"total\":\"29.99\"}".getBytes(StandardCharsets.UTF_8);
  private static final Delivery EVENT =
      new Delivery("orders", "idem-key-1", "cust-1", BODY, Map.of("X-Idem-Pipeline", "orders"));

  private TestReceiver receiver;
  private Sink sink;

  @BeforeEach
  void start() throws Exception {
    receiver = new TestReceiver();
  }

  @AfterEach
  void stop() {
    if (sink != null) {
      sink.close();
    }
    receiver.close();
  }

  private Sink sink(Duration timeout) {
    sink =
        Sinks.http(
            new HttpSinkSettings(
                receiver.uri("/orders?token=s3cret"),
                Map.of("Authorization", "Bearer abc"),
                timeout));
    return sink;
  }

  @Test
  void postsTheEventWithTheIdempotencyKeyAndTheConfiguredHeaders() {
    receiver.answer(Answer.of(201, "{\"ok\":true}", "Content-Type", "application/json"));

    DeliveryOutcome outcome = sink(Duration.ofSeconds(5)).deliver(EVENT);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Delivered.class,
            d -> {
              assertThat(d.status()).isEqualTo(201);
              assertThat(new String(d.responseBody(), StandardCharsets.UTF_8))
                  .isEqualTo("{\"ok\":true}");
              assertThat(d.contentType()).isEqualTo("application/json");
            });
    TestReceiver.Received request = receiver.received().get(0);
    assertThat(request.method()).isEqualTo("POST");
    assertThat(request.path()).isEqualTo("/orders?token=s3cret");
    assertThat(request.body()).isEqualTo(BODY);
    assertThat(request.header("Content-Type")).isEqualTo("application/json");
    assertThat(request.header("Idempotency-Key")).isEqualTo("idem-key-1");
    assertThat(request.header("Authorization")).isEqualTo("Bearer abc");
    assertThat(request.header("X-Idem-Pipeline")).isEqualTo("orders");
    assertThat(sink.describe()).isEqualTo("http:" + receiver.uri("/orders").toString() + "?***");
  }

  @Test
  void theContentTypeIsTheDeliverysElseTheConfiguredOne() {
    sink =
        Sinks.http(
            new HttpSinkSettings(
                receiver.uri("/"),
                Map.of("content-type", "application/vnd.orders+json"),
                Duration.ofSeconds(5)));

    sink.deliver(new Delivery("orders", "k1", null, BODY, Map.of()));
    sink.deliver(new Delivery("orders", "k2", null, BODY, Map.of("Content-Type", "text/plain")));

    assertThat(receiver.received())
        .extracting(r -> r.header("Content-Type"))
        .containsExactly("application/vnd.orders+json", "text/plain");
  }

  @Test
  void anEmptySuccessHasNoBody() {
    receiver.answer(Answer.code(204));

    assertThat(sink(Duration.ofSeconds(5)).deliver(EVENT))
        .isEqualTo(new DeliveryOutcome.Delivered(204, null, null));
  }

  @Test
  void aDeliveryMayNotOverrideTheIdempotencyKey() {
    Delivery sneaky =
        new Delivery(
            "orders",
            "real",
            null,
            BODY,
            Map.of("Idempotency-Key", "fake", "Content-Type", "application/cloudevents+json"));

    sink(Duration.ofSeconds(5)).deliver(sneaky);

    assertThat(receiver.received().get(0).header("Idempotency-Key")).isEqualTo("real");
    assertThat(receiver.received().get(0).header("Content-Type"))
        .isEqualTo("application/cloudevents+json");
  }

  @Test
  void serverErrorsAndThrottlingAreRetryableWithRetryAfter() {
    receiver.answer(
        Answer.of(503, "down for maintenance", "Retry-After", "7"),
        Answer.of(429, "", "Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"),
        Answer.code(500),
        Answer.code(408));
    sink(Duration.ofSeconds(5));

    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.retryAfter()).isEqualTo(Duration.ofSeconds(7));
              assertThat(f.error())
                  .startsWith("HTTP 503 from POST http://127.0.0.1:")
                  .endsWith("/orders?***: down for maintenance")
                  .doesNotContain("s3cret");
            });
    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.retryAfter()).isNotNull();
            });
    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.retryAfter()).isNull();
            });
    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class, f -> assertThat(f.retryable()).isTrue());
  }

  @Test
  void retryAfterAsAnHttpDateIsTheTimeUntilThen() {
    HttpSink http =
        new HttpSink(
            HttpSinkSettings.of(receiver.uri("/")),
            new ManualTimeSource(Instant.parse("2026-10-21T07:27:30Z")));
    try {
      assertThat(http.retryAfter("Wed, 21 Oct 2026 07:28:00 GMT"))
          .isEqualTo(Duration.ofSeconds(30));
      assertThat(http.retryAfter("Wed, 21 Oct 2026 07:00:00 GMT")).isEqualTo(Duration.ZERO);
      assertThat(http.retryAfter(" 120 ")).isEqualTo(Duration.ofSeconds(120));
      assertThat(http.retryAfter("soon")).isNull();
      assertThat(http.retryAfter(null)).isNull();
    } finally {
      http.close();
    }
  }

  @Test
  void otherClientErrorsAndRedirectsAreNotRetryable() {
    receiver.answer(
        Answer.of(400, "{\"error\":\"missing field total\"}"),
        Answer.of(301, "", "Location", "https://elsewhere.example/"));
    sink(Duration.ofSeconds(5));

    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isFalse();
              assertThat(f.error()).contains("HTTP 400").contains("missing field total");
            });
    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isFalse();
              assertThat(f.error()).contains("redirects are not followed");
            });
  }

  @Test
  void aTimeoutIsRetryable() {
    receiver.answer(Answer.hanging());

    DeliveryOutcome outcome = sink(Duration.ofMillis(300)).deliver(EVENT);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.error()).contains("timed out after 300ms");
            });
  }

  @Test
  void aRefusedConnectionIsRetryable() throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = socket.getLocalPort();
    }
    sink = Sinks.http(HttpSinkSettings.of(URI.create("http://127.0.0.1:" + port + "/x")));

    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.error()).contains("could not connect");
            });
  }

  @Test
  void aLargeResponseIsCutToTheBoundNotFailed() {
    receiver.answer(Answer.of(200, "x".repeat(100_000)));
    sink =
        Sinks.http(
            new HttpSinkSettings(receiver.uri("/"), Map.of(), Duration.ofSeconds(5), 4, 1024));

    assertThat(sink.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Delivered.class, d -> assertThat(d.responseBody()).hasSize(1024));
  }

  @Test
  void syncDeliveryRetries503AndNot400WithTheSameIdempotencyKey() {
    // Given a receiver that is down twice, then up
    receiver.answer(Answer.code(503), Answer.code(503), Answer.code(200), Answer.code(400));
    SyncDeliverer deliverer =
        SyncDeliverer.builder(sink(Duration.ofSeconds(5)))
            .retryPolicy(new RetryPolicy(5, Duration.ofMillis(1), Duration.ofMillis(5)))
            .build();

    // When / Then: three attempts, all with the same key
    assertThat(deliverer.deliver(EVENT)).isInstanceOf(DeliveryOutcome.Delivered.class);
    assertThat(receiver.received()).hasSize(3);
    assertThat(receiver.received())
        .extracting(r -> r.header("Idempotency-Key"))
        .containsOnly("idem-key-1");

    // And a 400 is not retried
    assertThat(deliverer.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class, f -> assertThat(f.retryable()).isFalse());
    assertThat(receiver.received()).hasSize(4);
  }

  @Test
  void settingsAreValidatedAndHideCredentials() {
    assertThatThrownBy(() -> HttpSinkSettings.of(URI.create("ftp://host/x")))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("http or https");
    assertThatThrownBy(() -> HttpSinkSettings.of(URI.create("/relative")))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(
            () ->
                new HttpSinkSettings(
                    URI.create("http://h/"), Map.of("Idempotency-Key", "x"), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("set by Idem");
    assertThatThrownBy(
            () ->
                new HttpSinkSettings(
                    URI.create("http://h/"), Map.of("X-A", "a\r\nb"), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(
            () ->
                new HttpSinkSettings(
                    URI.create("http://h/"), Map.of("Bad Name", "a"), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> new HttpSinkSettings(URI.create("http://h/"), Map.of(), Duration.ZERO))
        .isInstanceOf(IdemConfigException.class);

    HttpSinkSettings settings =
        new HttpSinkSettings(
            URI.create("https://h:8443/hook?sig=abc"),
            Map.of("Authorization", "Bearer abc", "X-Team", "ops"),
            Duration.ofSeconds(3));
    assertThat(settings.toString())
        .contains("https://h:8443/hook?***")
        .contains("Authorization=***")
        .contains("X-Team=ops")
        .doesNotContain("pw")
        .doesNotContain("abc");
  }

  @Test
  void userAndPasswordInTheUrlAreSentAsBasicAuthAndNeverInTheRequestLine() {
    // given a URL with percent-encoded user info (':' in the user, '@' and a space in the password)
    receiver.answer(Answer.code(204));
    URI url =
        URI.create(
            "http://al%3Aice:p%40ss%20w%C3%B6rd@127.0.0.1:"
                + receiver.uri("/").getPort()
                + "/orders?x=1");
    HttpSinkSettings settings =
        new HttpSinkSettings(url, Map.of("X-Team", "ops"), Duration.ofSeconds(5));

    // when
    sink = Sinks.http(settings);
    DeliveryOutcome outcome = sink.deliver(EVENT);

    // then downstream gets HTTP Basic with the decoded credentials, and the URL went without them
    assertThat(outcome).isInstanceOf(DeliveryOutcome.Delivered.class);
    TestReceiver.Received request = receiver.received().get(0);
    String expected =
        java.util.Base64.getEncoder()
            .encodeToString("al:ice:p@ss w\u00f6rd".getBytes(StandardCharsets.UTF_8));
    assertThat(request.header("Authorization")).isEqualTo("Basic " + expected);
    assertThat(request.header("X-Team")).isEqualTo("ops");
    assertThat(request.path()).isEqualTo("/orders?x=1");
    assertThat(settings.url().getRawUserInfo()).isNull();
    assertThat(settings.toString()).doesNotContain("ice").doesNotContain("ss").contains("***");
    assertThat(sink.describe()).doesNotContain("ice");
  }

  @Test
  void userInfoWithoutAPasswordOrNextToAnAuthorizationHeaderIsAConfigError() {
    assertThatThrownBy(
            () ->
                new HttpSinkSettings(
                    URI.create("https://alice@h/hook"), Map.of(), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("no password")
        .hasMessageContaining("user:password@")
        .hasMessageNotContaining("alice");
    assertThatThrownBy(
            () ->
                new HttpSinkSettings(
                    URI.create("https://alice:pw@h/hook"),
                    Map.of("authorization", "Bearer t"),
                    Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("keep one")
        .hasMessageNotContaining("pw");
  }
}
