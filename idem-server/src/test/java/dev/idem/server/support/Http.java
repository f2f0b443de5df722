package dev.idem.server.support;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** A small HTTP client for tests (java.net.http). */
public final class Http {
  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();

  private final URI base;

  public Http(URI base) {
    this.base = base;
  }

  public HttpResponse<String> post(String path, String body, String... headers) {
    return send(request(path, headers).POST(HttpRequest.BodyPublishers.ofString(body)).build());
  }

  public CompletableFuture<HttpResponse<String>> postAsync(
      String path, String body, String... headers) {
    return CLIENT.sendAsync(
        request(path, headers).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** POSTs without Content-Length (chunked). */
  public HttpResponse<String> postChunked(String path, byte[] body) {
    return send(
        request(path)
            .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body)))
            .build());
  }

  public HttpResponse<String> get(String path, String... headers) {
    return send(request(path, headers).GET().build());
  }

  public HttpResponse<String> delete(String path, String... headers) {
    return send(request(path, headers).DELETE().build());
  }

  public HttpResponse<String> method(String method, String path, String... headers) {
    return send(request(path, headers).method(method, HttpRequest.BodyPublishers.noBody()).build());
  }

  private HttpRequest.Builder request(String path, String... headers) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b;
  }

  private static HttpResponse<String> send(HttpRequest r) {
    try {
      return CLIENT.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
