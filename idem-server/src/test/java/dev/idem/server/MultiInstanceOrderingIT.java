package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.idem.server.support.Http;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 11: three {@code idem serve} processes share one store: a Redis (a redis-server this test
 * starts), a PostgreSQL database or a MariaDB database (each created for the run on the local
 * server and dropped after it); every ordering key's events are posted, each to a random instance,
 * by senders that do not wait for each other, and 20% of the accepted events are resent. During the
 * run two instances are killed with SIGKILL (each started again) and one is paused with SIGSTOP for
 * longer than {@code lock_ttl} (but not {@code dedup.lease}), then resumed.
 *
 * <p>At the end: every event was accepted and delivered; no resend of an accepted event was
 * delivered again; two events of one ordering key were never delivered at the same time (the
 * receiver counts overlapping deliveries per key: without the shared lock the three instances
 * overlap at once); a delivery repeated with the same {@code Idempotency-Key} happened only around
 * an owner's death or pause, and each carries an {@code Idem-Fence}.
 *
 * <p>The default build runs 20 keys x 25 events on each store; {@code -Psoak} runs the 50
 * keys x 200 events ({@code idem.ordering.keys}, {@code idem.ordering.events}). {@code
 * -Didem.ordering.stores=postgresql} runs one store only (a comma-separated list of {@code redis},
 * {@code postgresql}, {@code mariadb}).
 */
class MultiInstanceOrderingIT {
  private static final int KEYS = Integer.getInteger("idem.ordering.keys", 20);
  private static final int EVENTS = Integer.getInteger("idem.ordering.events", 25);
  private static final ObjectMapper JSON = new ObjectMapper();

  static Stream<SharedStoreForIt.Kind> stores() {
    return Arrays.stream(
            System.getProperty("idem.ordering.stores", "redis,postgresql,mariadb").split(","))
        .map(String::strip)
        .filter(s -> !s.isEmpty())
        .map(s -> SharedStoreForIt.Kind.valueOf(s.toUpperCase(Locale.ROOT)));
  }

  /** Kept after the run (under target/), so the instances' logs can be read after a failure. */
  private final Path dir = newDir();

  private static Path newDir() {
    try {
      Files.createDirectories(Path.of("target", "it-multi-instance"));
      return Files.createTempDirectory(Path.of("target", "it-multi-instance"), "run-");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private final List<Process> processes = new CopyOnWriteArrayList<>();
  private HttpServer receiver;
  private SharedStoreForIt store;

  /** What the downstream saw. */
  record Seen(String customer, int seq, String idempotencyKey, String fence) {}

  private final List<Seen> seen = new CopyOnWriteArrayList<>();
  private final Map<String, AtomicInteger> busy = new ConcurrentHashMap<>();
  private final AtomicInteger overlaps = new AtomicInteger();

  @AfterEach
  void stop() throws Exception {
    for (Process p : processes) {
      ProcessHandle.of(p.pid()).ifPresent(h -> signal(h.pid(), "CONT"));
      p.destroyForcibly();
    }
    for (Process p : processes) {
      p.waitFor(30, TimeUnit.SECONDS);
    }
    if (receiver != null) {
      receiver.stop(0);
    }
    if (store != null) {
      store.close();
    }
  }

  @ParameterizedTest(name = "on {0}")
  @MethodSource("stores")
  void threeInstancesDeliverEachKeysEventsOneAtATimeOnceEachThroughKillsAndPauses(
      SharedStoreForIt.Kind kind) throws Exception {
    assertThat(LauncherIT.JAR).as("the shaded jar, built in the package phase").exists();
    Path dir = this.dir.resolve(kind.name().toLowerCase(Locale.ROOT));
    Files.createDirectories(dir);
    store = SharedStoreForIt.open(kind, dir);
    startReceiver();
    int[] ports = {freePort(), freePort(), freePort()};
    for (int i = 0; i < 3; i++) {
      Files.writeString(
          dir.resolve("idem-" + i + ".yaml"),
          """
          server: { host: 127.0.0.1, port: %d, shutdown_timeout: 2s }
          store: %s
          pipelines:
            - id: orders
              source: { webhook: { path: /hooks/orders } }
              dedup: { key: id, lease: 10s }
              ordering: { key: customer, mode: strict, lock_ttl: 3s }
              deliver:
                retries: 2
                backoff: 20ms
                http: { url: "http://127.0.0.1:%d/in", timeout: 5s }
          """
              .formatted(ports[i], store.yaml(i), receiver.getAddress().getPort()));
    }
    Process[] instance = new Process[3];
    Http[] http = new Http[3];
    for (int i = 0; i < 3; i++) {
      http[i] = new Http(URI.create("http://127.0.0.1:" + ports[i]));
      instance[i] = start(dir, i, 0);
    }
    for (int i = 0; i < 3; i++) {
      awaitUp(http[i], instance[i]);
    }

    // when: every key's events are posted, each to a random instance, 20% resent once accepted
    AtomicLong accepted = new AtomicLong();
    Set<String> resentAccepted = ConcurrentHashMap.newKeySet();
    // Two senders per key (even and odd events), so one key's events do arrive concurrently.
    ExecutorService senders = Executors.newFixedThreadPool(2 * KEYS);
    List<Future<?>> done = new ArrayList<>();
    long total = (long) KEYS * EVENTS;
    for (int k = 0; k < KEYS; k++) {
      for (int half = 0; half < 2; half++) {
        int key = k;
        int first = half;
        done.add(
            senders.submit(
                () -> {
                  SplittableRandom random = new SplittableRandom(key * 2L + first);
                  for (int e = first; e < EVENTS; e += 2) {
                    String body =
                        "{\"id\":\"c%d-%d\",\"customer\":\"c%d\",\"seq\":%d}"
                            .formatted(key, e, key, e);
                    post(http, random, body);
                    accepted.incrementAndGet();
                    if (random.nextInt(5) == 0 && post(http, random, body) == 202) {
                      resentAccepted.add(body);
                    }
                  }
                  return null;
                }));
      }
    }
    // an instance killed mid-run and started again, another paused past lock_ttl and resumed,
    // (but not past dedup.lease, 10 s: a delivery that outlasts its lease may be delivered again
    // and its resend accepted again, as docs/service.md says),
    // and the third killed and started again
    awaitAccepted(accepted, total / 4);
    instance[0].destroyForcibly();
    assertThat(instance[0].waitFor(30, TimeUnit.SECONDS)).isTrue();
    instance[0] = start(dir, 0, 1);
    awaitAccepted(accepted, total / 2);
    signal(instance[1].pid(), "STOP");
    Thread.sleep(4_000); // lock_ttl (3 s) and a second: the schedule of the pause, not a wait
    signal(instance[1].pid(), "CONT");
    awaitAccepted(accepted, 3 * total / 4);
    instance[2].destroyForcibly();
    assertThat(instance[2].waitFor(30, TimeUnit.SECONDS)).isTrue();
    instance[2] = start(dir, 2, 1);
    for (Future<?> f : done) {
      f.get(5, TimeUnit.MINUTES);
    }
    senders.shutdown();

    // then
    assertThat(overlaps.get()).as("deliveries of one key that overlapped").isZero();
    assertThat(resentAccepted).as("resends of accepted events that were accepted again").isEmpty();
    // The pause makes the paused instance's Redis commands in flight time out when it resumes
    // (2 s command timeout): each such commit is tried again at once, so none is left in flight.
    assertThat(logLines(dir, "delivered, but the commit failed"))
        .as("commits given up after the pause (their keys left in flight until the lease ends)")
        .isEmpty();
    Map<String, List<Seen>> byKey = new ConcurrentHashMap<>();
    for (Seen s : seen) {
      byKey.computeIfAbsent(s.customer(), c -> new ArrayList<>()).add(s);
    }
    int redelivered = 0;
    for (int k = 0; k < KEYS; k++) {
      List<Seen> list = byKey.getOrDefault("c" + k, List.of());
      Set<Integer> seqs = new java.util.TreeSet<>();
      for (Seen s : list) {
        if (!seqs.add(s.seq())) {
          redelivered++;
        }
        assertThat(s.fence()).as("the owner's fence goes downstream").isNotBlank();
        assertThat(s.idempotencyKey()).startsWith("orders:");
      }
      assertThat(seqs).as("key c%d: every event delivered", k).hasSize(EVENTS);
    }
    // A repeat is allowed only for an event whose owner died or paused mid-delivery: at most one
    // per key in flight at each of the two kills and at the pause.
    assertThat(redelivered)
        .as("deliveries repeated after an owner's death or pause")
        .isLessThanOrEqualTo(3 * KEYS);
  }

  /** The lines of every instance's log (all lives) that contain {@code text}. */
  private static List<String> logLines(Path dir, String text) throws IOException {
    List<String> found = new ArrayList<>();
    try (Stream<Path> logs = Files.list(dir)) {
      for (Path log : logs.filter(f -> f.getFileName().toString().endsWith(".txt")).toList()) {
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
          if (line.contains(text)) {
            found.add(log.getFileName() + ": " + line);
          }
        }
      }
    }
    return found;
  }

  private int post(Http[] http, SplittableRandom random, String body) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      Http h = http[random.nextInt(http.length)];
      try {
        HttpResponse<String> r = h.post("/hooks/orders", body);
        if (r.statusCode() == 202 || r.statusCode() == 200) {
          return r.statusCode();
        }
      } catch (RuntimeException e) {
        // that instance is down or paused: try another
      }
      Thread.sleep(20);
    }
    throw new AssertionError("not accepted within 120 s: " + body);
  }

  /** Like LauncherIT.awaitUp, with room for three JVMs starting at once on a loaded machine. */
  private static void awaitUp(Http http, Process p) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(180))
        .pollInterval(Duration.ofMillis(250))
        .ignoreExceptions()
        .until(
            () -> {
              if (!p.isAlive()) {
                throw new AssertionError("idem exited with " + p.exitValue());
              }
              return http.get("/health").statusCode() == 200;
            });
  }

  private static void awaitAccepted(AtomicLong accepted, long n) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofMinutes(3))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> accepted.get() >= n);
  }

  private void startReceiver() throws IOException {
    receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    receiver.setExecutor(Executors.newFixedThreadPool(32));
    receiver.createContext(
        "/in",
        exchange -> {
          byte[] body;
          try (InputStream in = exchange.getRequestBody()) {
            body = in.readAllBytes();
          }
          JsonNode event = JSON.readTree(new String(body, StandardCharsets.UTF_8));
          String customer = event.path("customer").asText();
          AtomicInteger b = busy.computeIfAbsent(customer, c -> new AtomicInteger());
          if (b.incrementAndGet() > 1) {
            overlaps.incrementAndGet();
          }
          try {
            Thread.sleep(5); // a downstream that takes a moment, so overlaps would show
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            b.decrementAndGet();
          }
          String fence = exchange.getRequestHeaders().getFirst("Idem-Fence");
          seen.add(
              new Seen(
                  customer,
                  event.path("seq").asInt(),
                  String.valueOf(exchange.getRequestHeaders().getFirst("Idempotency-Key")),
                  fence == null ? "" : fence));
          exchange.sendResponseHeaders(200, -1);
          exchange.close();
        });
    receiver.start();
  }

  private Process start(Path dir, int instance, int life) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p =
        new ProcessBuilder(
                java,
                "-Xmx192m",
                "-jar",
                LauncherIT.JAR.toAbsolutePath().toString(),
                "serve",
                "--config",
                "idem-" + instance + ".yaml")
            .directory(dir.toFile())
            .redirectOutput(dir.resolve("out-" + instance + "-" + life + ".txt").toFile())
            .redirectError(dir.resolve("err-" + instance + "-" + life + ".txt").toFile())
            .start();
    processes.add(p);
    return p;
  }

  private static void signal(long pid, String signal) {
    try {
      new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start().waitFor();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
