package dev.idem.server.deliver;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** A real HTTP server on a random loopback port that records requests and answers from a script. */
final class TestReceiver implements AutoCloseable {

  /** A recorded request; header names lower-cased. */
  record Received(String method, String path, Map<String, String> headers, byte[] body) {
    String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** A scripted answer; {@code hang} holds the request until the receiver closes. */
  record Answer(int status, Map<String, String> headers, byte[] body, boolean hang) {
    static Answer code(int status) {
      return new Answer(status, Map.of(), new byte[0], false);
    }

    static Answer of(int status, String body, String... headers) {
      Map<String, String> h = new TreeMap<>();
      for (int i = 0; i < headers.length; i += 2) {
        h.put(headers[i], headers[i + 1]);
      }
      return new Answer(status, h, body.getBytes(java.nio.charset.StandardCharsets.UTF_8), false);
    }

    static Answer hanging() {
      return new Answer(0, Map.of(), new byte[0], true);
    }
  }

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final List<Received> received = new ArrayList<>();
  private final Deque<Answer> script = new ArrayDeque<>();
  private final CountDownLatch closing = new CountDownLatch(1);

  TestReceiver() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", this::handle);
    server.setExecutor(executor);
    server.start();
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  synchronized TestReceiver answer(Answer... answers) {
    script.addAll(List.of(answers));
    return this;
  }

  synchronized List<Received> received() {
    return List.copyOf(received);
  }

  private void handle(HttpExchange exchange) throws IOException {
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      body = in.readAllBytes();
    }
    Map<String, String> headers = new TreeMap<>();
    exchange
        .getRequestHeaders()
        .forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), String.join(",", v)));
    Answer answer;
    synchronized (this) {
      received.add(
          new Received(
              exchange.getRequestMethod(), exchange.getRequestURI().toString(), headers, body));
      answer = script.isEmpty() ? Answer.code(200) : script.poll();
    }
    if (answer.hang()) {
      try {
        closing.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      exchange.close();
      return;
    }
    answer.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
    exchange.sendResponseHeaders(
        answer.status(), answer.body().length == 0 ? -1 : answer.body().length);
    if (answer.body().length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(answer.body());
      }
    }
    exchange.close();
  }

  @Override
  public void close() {
    closing.countDown();
    server.stop(0);
    executor.shutdownNow();
  }
}
