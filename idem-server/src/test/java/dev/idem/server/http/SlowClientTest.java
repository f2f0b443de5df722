package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.server.config.HttpLimits;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.support.RawHttp;
import dev.idem.server.support.RawHttp.Reply;
import dev.idem.server.support.TestService;
import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 §1 over real sockets: slow clients hold no request thread, a trickled body is answered
 * {@code 408} in the JSON form, and a declared {@code Content-Length} is never allocated up front.
 * The service runs with 16 request threads, so more slow connections than threads would starve a
 * blocking reader.
 */
class SlowClientTest {
  static final String YAML =
      """
      store: { type: memory }
      pipelines:
        - id: p
          source: { webhook: { path: /hooks/p, max_body: 64MiB } }
          dedup: { key: source.id }
          deliver: { stdout: {} }
      """;

  static String head(long contentLength) {
    return "POST /hooks/p HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: "
        + contentLength
        + "\r\n\r\n";
  }

  /** Limits that a body trickled at 10 bytes per second is within. */
  static ServerSettings patient(ServerSettings s) {
    return s.withLimits(new HttpLimits(Duration.ofMinutes(1), 8, Duration.ofMinutes(1), 8192));
  }

  static void assertTimeout(Reply r) {
    assertThat(r.status()).as(r.toString()).isEqualTo(408);
    assertThat(r.header("Content-Type")).startsWith("application/json");
    assertThat(r.header("Connection")).isEqualTo("close");
    assertThat(r.body()).startsWith("{\"error\":\"request_timeout\",\"message\":\"");
  }

  @Test
  void moreSlowUploadsThanThreadsDoNotStopOthersBeingServed() {
    // Slow clients are bounded only by the read timeout here, so they stay open for the test.
    try (TestService s =
            TestService.start(
                YAML,
                null,
                l ->
                    l.withLimits(
                        new HttpLimits(Duration.ofMinutes(5), 0, Duration.ofMinutes(5), 8192)));
        Slow slow = new Slow(s, 48)) {
      HttpResponse<String> event = s.http.post("/hooks/p", "{\"id\":\"meanwhile\"}");
      HttpResponse<String> health = s.http.get("/health");

      assertThat(event.statusCode()).isEqualTo(202);
      assertThat(health.statusCode()).isEqualTo(200);
      // The last answer's own exchange may still be finishing; then only the 48 remain.
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(s.server.requestsInFlight())
                      .as("slow uploads still unanswered")
                      .isEqualTo(48));
    }
  }

  @Test
  void moreSlowHeadersThanThreadsDoNotStopOthersBeingServed() {
    try (TestService s =
        TestService.start(
            YAML,
            null,
            l ->
                l.withLimits(
                    new HttpLimits(Duration.ofMinutes(5), 0, Duration.ofMinutes(5), 8192)))) {
      List<RawHttp> clients = new ArrayList<>();
      try {
        for (int i = 0; i < 48; i++) {
          RawHttp c = new RawHttp(s.server.uri());
          clients.add(c);
          c.send("POST /hooks/p HTTP/1.1\r\nHost: x\r\nX-Slow: a");
        }

        HttpResponse<String> event = s.http.post("/hooks/p", "{\"id\":\"meanwhile\"}");
        HttpResponse<String> health = s.http.get("/health");

        assertThat(event.statusCode()).isEqualTo(202);
        assertThat(health.statusCode()).isEqualTo(200);
      } finally {
        clients.forEach(RawHttp::close);
      }
    }
  }

  @Test
  void headersTrickledPastTheReadTimeoutAre408BeforeTheyEnd() {
    try (TestService s =
            TestService.start(
                YAML,
                null,
                l ->
                    l.withLimits(
                        new HttpLimits(Duration.ofSeconds(2), 0, Duration.ofMinutes(1), 8192)));
        RawHttp c = new RawHttp(s.server.uri())) {
      String headers =
          "POST /hooks/p HTTP/1.1\r\nHost: x\r\nX-Slow: " + "a".repeat(300) + "\r\n\r\n";
      AtomicInteger sent = trickle(c, headers);

      Reply r = c.read();

      assertTimeout(r);
      assertThat(r.body()).contains("request line and headers").contains("server.read_timeout");
      assertThat(sent.get()).as("header bytes sent before the answer").isLessThan(headers.length());
    }
  }

  /** Sends one byte every 100 ms from a daemon thread, until done or the connection closes. */
  static AtomicInteger trickle(RawHttp c, String text) {
    AtomicInteger sent = new AtomicInteger();
    Thread t =
        new Thread(
            () -> {
              for (byte b : text.getBytes(StandardCharsets.US_ASCII)) {
                if (!c.trySend(new byte[] {b})) {
                  return;
                }
                sent.incrementAndGet();
                try {
                  Thread.sleep(100); // the slow client under test, not a wait for a result
                } catch (InterruptedException e) {
                  return;
                }
              }
            });
    t.setDaemon(true);
    t.start();
    return sent;
  }

  @Test
  void aBodyTrickledPastTheReadTimeoutIs408BeforeItEnds() {
    try (TestService s =
            TestService.start(
                YAML,
                null,
                l ->
                    l.withLimits(
                        new HttpLimits(Duration.ofSeconds(2), 0, Duration.ofMinutes(1), 8192)));
        RawHttp c = new RawHttp(s.server.uri())) {
      String body = "{\"id\":\"" + "t".repeat(200) + "\"}";
      c.send(head(body.length()));
      AtomicInteger sent = trickle(c, body);

      Reply r = c.read();

      assertTimeout(r);
      assertThat(r.body()).contains("server.read_timeout");
      assertThat(sent.get()).as("bytes sent before the answer").isLessThan(body.length());
      assertThat(s.sinks.get("p").delivered()).isEmpty();
    }
  }

  @Test
  void aBodyThatArrivesInPiecesWithinTheLimitsIsAcceptedAndDelivered() {
    try (TestService s = TestService.start(YAML, null, SlowClientTest::patient);
        RawHttp c = new RawHttp(s.server.uri())) {
      String body = "{\"id\":\"pieces\",\"n\":[1,2,3]}";
      c.send(head(body.length()));
      AtomicInteger sent = trickle(c, body);

      Reply r = c.read();

      assertThat(r.status()).as(r.toString()).isEqualTo(202);
      // the trickling thread counts its last byte after the write that let the answer go
      await()
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(() -> assertThat(sent.get()).isEqualTo(body.length()));
      assertThat(s.sinks.get("p").bodies()).containsExactly(body);
    }
  }

  @Test
  void aChunkedBodyInPiecesIsAccepted() {
    try (TestService s = TestService.start(YAML, null, SlowClientTest::patient);
        RawHttp c = new RawHttp(s.server.uri())) {
      c.send(
          "POST /hooks/p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
              + "6\r\n{\"id\":\r\n");
      trickle(c, "9\r\n\"chunked\"\r\n1\r\n}\r\n0\r\n\r\n");

      Reply r = c.read();

      assertThat(r.status()).as(r.toString()).isEqualTo(202);
      assertThat(s.sinks.get("p").bodies()).containsExactly("{\"id\":\"chunked\"}");
    }
  }

  @Test
  void aBodyBelowTheMinimumRateIs408() {
    try (TestService s =
            TestService.start(
                YAML,
                null,
                l ->
                    l.withLimits(
                        new HttpLimits(Duration.ofMinutes(5), 1024, Duration.ofMinutes(5), 8192)));
        RawHttp c = new RawHttp(s.server.uri())) {
      c.send(head(100_000) + "{\"id\":");

      Reply r = c.read();

      assertTimeout(r);
      assertThat(r.body()).contains("server.min_data_rate");
    }
  }

  @Test
  void aSilentConnectionIs408AfterTheIdleTimeout() {
    try (TestService s =
            TestService.start(
                YAML,
                null,
                l ->
                    l.withLimits(
                        new HttpLimits(Duration.ofMinutes(5), 0, Duration.ofMillis(500), 8192)));
        RawHttp c = new RawHttp(s.server.uri())) {
      c.send(head(100) + "{");

      Reply r = c.read();

      assertTimeout(r);
      assertThat(r.body()).contains("server.idle_timeout");
    }
  }

  @Test
  void hugeDeclaredBodiesAreNotAllocatedBeforeTheyArrive() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long declared = 64L << 20;
    try (TestService s =
        TestService.start(
            YAML,
            null,
            l ->
                l.withLimits(
                    new HttpLimits(Duration.ofMinutes(5), 1024, Duration.ofMinutes(5), 8192)))) {
      List<RawHttp> clients = new ArrayList<>();
      long before = threads.getTotalThreadAllocatedBytes();
      try {
        for (int i = 0; i < 12; i++) {
          RawHttp c = new RawHttp(s.server.uri());
          clients.add(c);
          c.send(head(declared) + "{");
        }
        // Each falls behind the minimum rate and is answered; by then its buffer exists.
        for (RawHttp c : clients) {
          assertTimeout(c.read());
        }
      } finally {
        clients.forEach(RawHttp::close);
      }
      long allocated = threads.getTotalThreadAllocatedBytes() - before;

      // 12 x 64 MiB would be 768 MiB; everything the JVM allocated meanwhile is far less than one.
      assertThat(allocated).isLessThan(declared);
    }
  }

  /** Connections that each sent their headers and one body byte of a larger declared body. */
  static final class Slow implements AutoCloseable {
    final List<RawHttp> clients = new ArrayList<>();

    Slow(TestService s, int n) {
      for (int i = 0; i < n; i++) {
        RawHttp c = new RawHttp(s.server.uri());
        clients.add(c);
        c.send(head(100) + "{");
      }
      // Every one is inside the handler: a blocking reader would now hold a thread for each.
      await().atMost(Duration.ofSeconds(30)).until(() -> s.server.requestsInFlight() >= n);
    }

    @Override
    public void close() {
      clients.forEach(RawHttp::close);
    }
  }
}
