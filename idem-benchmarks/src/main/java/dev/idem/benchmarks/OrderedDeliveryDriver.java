package dev.idem.benchmarks;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 11 §Benchmark: ordered delivery throughput with 1 and 3 {@code idem serve} instances on one
 * Redis (100 ordering keys, a fast downstream in this JVM), against unordered delivery in the same
 * run. Each key has one sender that posts its events one after another (waiting for each answer, as
 * ordered webhooks are sent), each to a random instance; the downstream counts deliveries and
 * checks each key's order. Prints one line per case: events/s and order violations.
 *
 * <pre>
 * java -cp idem-benchmarks/target/classes dev.idem.benchmarks.OrderedDeliveryDriver \
 *   --jar idem-server/target/idem.jar --redis redis://127.0.0.1:6379 --seconds 20 --keys 100 \
 *   [--unordered-mode async]   # once the Redis store has an outbox; sync otherwise
 * </pre>
 */
public final class OrderedDeliveryDriver {
  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();

  private OrderedDeliveryDriver() {}

  /**
   * Runs the cases.
   *
   * @param args see the class comment
   * @throws Exception if a case cannot run
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    Path jar = Path.of(o.getOrDefault("jar", "idem-server/target/idem.jar"));
    String redis = o.getOrDefault("redis", "redis://127.0.0.1:6379");
    int seconds = Integer.parseInt(o.getOrDefault("seconds", "20"));
    int keys = Integer.parseInt(o.getOrDefault("keys", "100"));
    String unorderedMode = o.getOrDefault("unordered-mode", "sync");
    Downstream down = new Downstream();
    try {
      System.out.println("case,instances,events_per_s,delivered,order_violations");
      run("unordered-" + unorderedMode, 3, null, unorderedMode, jar, redis, seconds, keys, down);
      run("strict", 1, "strict", "sync", jar, redis, seconds, keys, down);
      run("strict", 3, "strict", "sync", jar, redis, seconds, keys, down);
    } finally {
      down.server.stop(0);
      // The server's executor is ours to stop; its threads would keep the JVM alive.
      down.executor.shutdownNow();
    }
  }

  private static void run(
      String name,
      int instances,
      String ordering,
      String mode,
      Path jar,
      String redis,
      int seconds,
      int keys,
      Downstream down)
      throws Exception {
    down.reset();
    String prefix = "bench-" + System.nanoTime() + ":";
    Path dir = Files.createTempDirectory("idem-ordered-bench");
    List<Process> procs = new ArrayList<>();
    List<URI> uris = new ArrayList<>();
    try {
      for (int i = 0; i < instances; i++) {
        int port = freePort();
        Path cfg = dir.resolve("idem-" + i + ".yaml");
        Files.writeString(
            cfg,
            """
            server: { host: 127.0.0.1, port: %d }
            store: { type: redis, url: "%s", prefix: "%s" }
            pipelines:
              - id: bench
                source: { webhook: { path: /in } }
                dedup: { key: id }
            %s
                deliver: { mode: %s, http: { url: "http://127.0.0.1:%d/in" } }
            """
                .formatted(
                    port,
                    redis,
                    prefix,
                    ordering == null
                        ? ""
                        : "    ordering: { key: customer, mode: " + ordering + ", lock_ttl: 5s }",
                    mode,
                    down.server.getAddress().getPort()));
        procs.add(
            new ProcessBuilder(
                    "java",
                    "-jar",
                    jar.toAbsolutePath().toString(),
                    "serve",
                    "--config",
                    cfg.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("out-" + i + ".txt").toFile())
                .start());
        uris.add(URI.create("http://127.0.0.1:" + port + "/in"));
      }
      for (URI u : uris) {
        awaitUp(u);
      }
      AtomicLong sent = new AtomicLong();
      long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
      ExecutorService senders = Executors.newFixedThreadPool(keys);
      for (int k = 0; k < keys; k++) {
        String customer = "c" + k;
        senders.submit(
            () -> {
              long seq = 0;
              while (System.nanoTime() < end) {
                URI to = uris.get(ThreadLocalRandom.current().nextInt(uris.size()));
                String body =
                    "{\"id\":\"%s-%d\",\"customer\":\"%s\",\"seq\":%d}"
                        .formatted(customer, seq, customer, seq);
                try {
                  int status =
                      CLIENT
                          .send(
                              HttpRequest.newBuilder(to)
                                  .timeout(Duration.ofSeconds(30))
                                  .header("Content-Type", "application/json")
                                  .POST(HttpRequest.BodyPublishers.ofString(body))
                                  .build(),
                              HttpResponse.BodyHandlers.discarding())
                          .statusCode();
                  if (status / 100 == 2) {
                    seq++;
                    sent.incrementAndGet();
                  }
                } catch (IOException e) {
                  // retried with the same event
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
              }
            });
      }
      senders.shutdown();
      senders.awaitTermination(seconds + 60L, java.util.concurrent.TimeUnit.SECONDS);
      Thread.sleep(2_000); // async: let the outbox drain
      System.out.printf(
          "%s,%d,%.0f,%d,%d%n",
          name,
          instances,
          down.delivered.get() / (double) seconds,
          down.delivered.get(),
          down.violations.get());
    } finally {
      for (Process p : procs) {
        p.destroy();
      }
      for (Process p : procs) {
        p.waitFor();
      }
    }
  }

  private static void awaitUp(URI u) throws Exception {
    URI health = u.resolve("/health");
    for (int i = 0; i < 300; i++) {
      try {
        CLIENT.send(HttpRequest.newBuilder(health).build(), HttpResponse.BodyHandlers.discarding());
        return;
      } catch (IOException e) {
        Thread.sleep(100);
      }
    }
    throw new IllegalStateException("instance " + u + " did not start");
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** A fast downstream that counts deliveries and checks each customer's order. */
  private static final class Downstream {
    final HttpServer server;
    final ExecutorService executor = Executors.newFixedThreadPool(16);
    final AtomicLong delivered = new AtomicLong();
    final AtomicLong violations = new AtomicLong();
    final Map<String, Long> last = new ConcurrentHashMap<>();

    Downstream() throws IOException {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 512);
      server.setExecutor(executor);
      server.createContext(
          "/",
          ex -> {
            String body;
            try (InputStream in = ex.getRequestBody()) {
              body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            String customer = body.replaceAll(".*\"customer\":\"([^\"]*)\".*", "$1");
            long seq = Long.parseLong(body.replaceAll(".*\"seq\":(\\d+).*", "$1"));
            Long before = last.put(customer, seq);
            if (before != null && seq < before) {
              violations.incrementAndGet();
            }
            delivered.incrementAndGet();
            ex.sendResponseHeaders(200, -1);
            ex.close();
          });
      server.start();
    }

    void reset() {
      delivered.set(0);
      violations.set(0);
      last.clear();
    }
  }
}
