package dev.idem.server.support;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/** A downstream HTTP receiver on loopback that records every request and can fail on demand. */
public final class Receiver implements AutoCloseable {
  /** One request received. */
  public record Received(String path, String idempotencyKey, String contentType, String body) {}

  private final HttpServer server;
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final AtomicInteger failNext = new AtomicInteger();
  private volatile int status = 200;
  private volatile String response = "{\"ok\":true}";

  public Receiver() {
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext(
        "/",
        exchange -> {
          byte[] body;
          try (InputStream in = exchange.getRequestBody()) {
            body = in.readAllBytes();
          }
          boolean fail = failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
          if (!fail) {
            received.add(
                new Received(
                    exchange.getRequestURI().getPath(),
                    exchange.getRequestHeaders().getFirst("Idempotency-Key"),
                    exchange.getRequestHeaders().getFirst("Content-Type"),
                    new String(body, StandardCharsets.UTF_8)));
          }
          byte[] answer =
              (fail ? "{\"error\":\"test failure\"}" : response).getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(fail ? 503 : status, answer.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(answer);
          }
        });
    server.start();
  }

  public URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  /** Answers the next {@code n} requests with 503 (and does not record them). */
  public void failNext(int n) {
    failNext.set(n);
  }

  public void respond(int status, String body) {
    this.status = status;
    this.response = body;
  }

  public List<Received> received() {
    return List.copyOf(received);
  }

  @Override
  public void close() {
    server.stop(0);
    ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
  }
}
