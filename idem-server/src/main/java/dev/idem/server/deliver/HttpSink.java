package dev.idem.server.deliver;

import dev.idem.IdemException;
import dev.idem.TimeSource;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.client.BytesRequestContent;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.http.HttpCookieStore;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.jspecify.annotations.Nullable;

/**
 * POSTs each event to one URL with Jetty's HTTP client: one shared client (connection pool,
 * HTTP/1.1 keep-alive), started at construction and stopped by {@link #close()}.
 *
 * <p>Each request carries the configured headers, then the delivery's own headers, then {@code
 * Idempotency-Key} (always Idem's). The body's {@code Content-Type} is the delivery's, else the
 * configured one, else {@code application/json}. Redirects are not followed and no cookies are
 * kept. Outcomes: 2xx is delivered (the response body kept up to the configured bound); 408, 429,
 * 5xx, timeouts and connection errors are retryable (with {@code Retry-After} passed up when
 * present); every other status is a permanent failure.
 */
final class HttpSink implements Sink {
  private static final Set<String> NOT_FROM_DELIVERY =
      Set.of(
          "idempotency-key",
          "content-length",
          "host",
          "transfer-encoding",
          "connection",
          "content-type");
  private static final int ERROR_SNIPPET_CHARS = 200;

  private final URI url;
  private final String description;
  private final long timeoutMillis;
  private final int maxResponseBytes;
  private final Map<String, String> headers;
  private final String configuredContentType;
  private final TimeSource time;
  private final HttpClient client;

  HttpSink(HttpSinkSettings settings, TimeSource time) {
    this.url = settings.url();
    this.description = "http:" + HttpSinkSettings.redact(url);
    this.timeoutMillis = settings.timeout().toMillis();
    this.maxResponseBytes = settings.maxResponseBytes();
    this.headers = settings.headers();
    String configured = "application/json";
    for (Map.Entry<String, String> h : headers.entrySet()) {
      if (h.getKey().equalsIgnoreCase("Content-Type")) {
        configured = h.getValue();
      }
    }
    this.configuredContentType = configured;
    this.time = time;

    QueuedThreadPool threads =
        new QueuedThreadPool(Math.max(8, Math.min(200, settings.maxConnections() * 2)), 2);
    threads.setName("idem-http-sink");
    threads.setDaemon(true);
    client = new HttpClient();
    client.setName("idem-http-sink");
    client.setExecutor(threads);
    client.setScheduler(new ScheduledExecutorScheduler("idem-http-sink-timer", true));
    client.setFollowRedirects(false);
    client.setHttpCookieStore(new HttpCookieStore.Empty());
    client.setConnectTimeout(timeoutMillis);
    client.setIdleTimeout(Math.max(60_000L, timeoutMillis));
    client.setMaxConnectionsPerDestination(settings.maxConnections());
    client.setMaxRequestsQueuedPerDestination(Math.max(1024, settings.maxConnections() * 16));
    client.setUserAgentField(new HttpField(HttpHeader.USER_AGENT, "Idem"));
    try {
      client.start();
    } catch (Exception e) {
      try {
        client.stop();
      } catch (Exception suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new IdemException("cannot start the HTTP client for " + description + ": " + e, e);
    }
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    String contentType = delivery.headers().get("Content-Type");
    if (contentType == null) {
      contentType = configuredContentType;
    }
    Request request =
        client
            .newRequest(url)
            .method(HttpMethod.POST)
            .timeout(timeoutMillis, TimeUnit.MILLISECONDS)
            .headers(
                h -> {
                  headers.forEach(
                      (name, value) -> {
                        if (!name.equalsIgnoreCase("Content-Type")) {
                          h.put(name, value);
                        }
                      });
                  delivery
                      .headers()
                      .forEach(
                          (name, value) -> {
                            if (!NOT_FROM_DELIVERY.contains(name.toLowerCase(Locale.ROOT))) {
                              h.put(name, value);
                            }
                          });
                  h.put("Idempotency-Key", delivery.idempotencyKey());
                })
            .body(new BytesRequestContent(contentType, delivery.body()));
    Collector collector = new Collector(maxResponseBytes);
    request.send(collector);
    Result result;
    try {
      // Jetty enforces the request timeout; the extra second only guards against a lost callback.
      result = collector.await(timeoutMillis + 1_000);
    } catch (InterruptedException e) {
      request.abort(e);
      Thread.currentThread().interrupt();
      return new DeliveryOutcome.Failed("POST " + redactedUrl() + " was interrupted", true);
    } catch (TimeoutException e) {
      request.abort(e);
      return timedOut();
    }
    if (result.isFailed()) {
      return failure(result.getFailure());
    }
    Response response = result.getResponse();
    int status = response.getStatus();
    byte[] body = collector.body();
    if (status >= 200 && status < 300) {
      return new DeliveryOutcome.Delivered(
          status,
          body.length == 0 ? null : body,
          response.getHeaders().get(HttpHeader.CONTENT_TYPE));
    }
    String error = "HTTP " + status + " from POST " + redactedUrl() + snippet(body);
    if (status == 408 || status == 429 || status >= 500) {
      return new DeliveryOutcome.Failed(
          error, true, retryAfter(response.getHeaders().get(HttpHeader.RETRY_AFTER)));
    }
    if (status >= 300 && status < 400) {
      error += " (redirects are not followed; point deliver.http.url at the final address)";
    }
    return new DeliveryOutcome.Failed(error, false);
  }

  private String redactedUrl() {
    return HttpSinkSettings.redact(url);
  }

  private DeliveryOutcome.Failed timedOut() {
    return new DeliveryOutcome.Failed(
        "POST " + redactedUrl() + " timed out after " + timeoutMillis + "ms", true);
  }

  private DeliveryOutcome.Failed failure(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null && root.getCause() != root) {
      if (root instanceof TimeoutException) {
        break;
      }
      root = root.getCause();
    }
    if (failure instanceof TimeoutException || root instanceof TimeoutException) {
      return timedOut();
    }
    String what;
    if (root instanceof ConnectException) {
      what = "could not connect (" + root.getMessage() + ")";
    } else if (root instanceof UnknownHostException || root instanceof UnresolvedAddressException) {
      what = "could not resolve the host";
    } else {
      what = "failed: " + root;
    }
    // Network errors are retried: the event is fine, the way to downstream is not (yet).
    return new DeliveryOutcome.Failed("POST " + redactedUrl() + " " + what, true);
  }

  /** Parses {@code Retry-After}: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
  @Nullable Duration retryAfter(@Nullable String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    String v = value.trim();
    if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      if (v.length() > 9) {
        return Duration.ofSeconds(999_999_999L);
      }
      return Duration.ofSeconds(Long.parseLong(v));
    }
    try {
      ZonedDateTime at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME);
      long millis = at.toInstant().toEpochMilli() - time.wallMillis();
      return Duration.ofMillis(Math.max(0, millis));
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static String snippet(byte[] body) {
    if (body.length == 0) {
      return "";
    }
    int n = Math.min(body.length, ERROR_SNIPPET_CHARS * 4);
    String text = new String(body, 0, n, StandardCharsets.UTF_8);
    StringBuilder s = new StringBuilder(": ");
    for (int i = 0; i < text.length() && s.length() < ERROR_SNIPPET_CHARS + 2; i++) {
      char c = text.charAt(i);
      s.append(Character.isISOControl(c) ? ' ' : c);
    }
    if (body.length > n || s.length() >= ERROR_SNIPPET_CHARS + 2) {
      s.append("...");
    }
    return s.toString();
  }

  @Override
  public String describe() {
    return description;
  }

  @Override
  public void close() {
    try {
      client.stop();
    } catch (Exception e) {
      throw new IdemException("stopping the HTTP client of " + description + " failed: " + e, e);
    }
  }

  @Override
  public String toString() {
    return description;
  }

  /** Keeps the first {@code max} body bytes, drops the rest, and signals completion. */
  private static final class Collector implements Response.Listener {
    private static final byte[] EMPTY = new byte[0];
    private final int max;
    private final CountDownLatch done = new CountDownLatch(1);
    private byte[] buffer = EMPTY;
    private int size;
    private @Nullable Result result;

    Collector(int max) {
      this.max = max;
    }

    @Override
    public void onContent(Response response, ByteBuffer content) {
      int n = Math.min(content.remaining(), max - size);
      if (n <= 0) {
        return;
      }
      if (size + n > buffer.length) {
        buffer = Arrays.copyOf(buffer, Math.min(max, Math.max(size + n, buffer.length * 2)));
      }
      content.get(buffer, size, n);
      size += n;
    }

    @Override
    public void onComplete(Result result) {
      this.result = result;
      done.countDown();
    }

    Result await(long millis) throws InterruptedException, TimeoutException {
      if (!done.await(millis, TimeUnit.MILLISECONDS)) {
        throw new TimeoutException();
      }
      Result r = result;
      if (r == null) {
        throw new IllegalStateException("completed without a result");
      }
      return r;
    }

    byte[] body() {
      return size == buffer.length ? buffer : Arrays.copyOf(buffer, size);
    }
  }
}
