package dev.idem.camel;

import static org.apache.camel.builder.Builder.exchangeProperty;
import static org.apache.camel.builder.Builder.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupConfig;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.model.RouteDefinition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Camel's own {@code idempotentConsumer} over {@link IdemIdempotentRepository}, on one store per
 * subclass: the behaviours Camel documents (eager, non-eager, skipDuplicate, removeOnFailure,
 * completionEager), scoped clear, and a concurrency storm (many threads, one message id: the route
 * body runs once).
 */
abstract class RepositoryRoutesContract {
  private static final Duration LEASE = Duration.ofSeconds(30);

  /** Opens the store under test; called once per test. */
  abstract DedupStore openStore() throws Exception;

  /** Removes what the test left in the store and closes it. */
  abstract void closeStore(DedupStore store) throws Exception;

  private DedupStore store;
  private final ManualTimeSource clock = new ManualTimeSource(Instant.now());
  private Scope scope;
  private IdemIdempotentRepository repo;
  private CamelContext camel;
  private ProducerTemplate producer;
  private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
  private final AtomicInteger duplicatesSeen = new AtomicInteger();

  @BeforeEach
  void open() throws Exception {
    store = openStore();
    scope = Scope.of("camel-" + UUID.randomUUID().toString().substring(0, 8));
    repo = IdemIdempotentRepository.of(repository(scope));
  }

  @AfterEach
  void close() throws Exception {
    if (camel != null) {
      camel.stop();
    }
    repo.clear();
    closeStore(store);
  }

  private Deduplicator repository(Scope s) {
    return Deduplicator.builder(store, s)
        .config(DedupConfig.custom().ttl(Duration.ofHours(1)).lease(LEASE).build())
        .timeSource(clock)
        .build();
  }

  /** Starts a context with one route {@code direct:in}, shaped by {@code route}. */
  private void route(Consumer<RouteDefinition> route) throws Exception {
    camel = new DefaultCamelContext();
    camel.addRoutes(
        new RouteBuilder() {
          @Override
          public void configure() {
            route.accept(from("direct:in").routeId("in"));
          }
        });
    camel.start();
    producer = camel.createProducerTemplate();
  }

  /** Sends one message and returns the finished exchange (its exception, if any, is on it). */
  private Exchange send(String id, String body) {
    return producer.send(
        "direct:in",
        e -> {
          e.getMessage().setHeader("id", id);
          e.getMessage().setBody(body);
        });
  }

  /** The route body: counts a run per id and fails when the body says so. */
  private void work(Exchange e) {
    String id = e.getMessage().getHeader("id", String.class);
    runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
    if ("fail".equals(e.getMessage().getBody(String.class))) {
      throw new IllegalStateException("the work failed for " + id);
    }
  }

  private int runsOf(String id) {
    AtomicInteger n = runs.get(id);
    return n == null ? 0 : n.get();
  }

  @Test
  void eagerModeRunsEachMessageIdOnceAndCommitsIt() throws Exception {
    route(r -> r.idempotentConsumer(header("id"), repo).process(this::work));

    send("a", "x");
    Exchange dup = send("a", "x");
    send("b", "x");

    assertThat(runsOf("a")).isEqualTo(1);
    assertThat(runsOf("b")).isEqualTo(1);
    assertThat(dup.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void removeOnFailureReleasesTheKeySoAResendRuns() throws Exception {
    route(r -> r.idempotentConsumer(header("id"), repo).removeOnFailure(true).process(this::work));

    Exchange failed = send("a", "fail");
    assertThat(failed.getException()).hasMessageContaining("the work failed");
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Absent.class);

    Exchange resent = send("a", "ok");

    assertThat(resent.getException()).isNull();
    assertThat(runsOf("a")).isEqualTo(2);
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void withoutRemoveOnFailureAFailedKeyStaysInFlightOnlyUntilItsLeaseEnds() throws Exception {
    route(r -> r.idempotentConsumer(header("id"), repo).removeOnFailure(false).process(this::work));

    send("a", "fail");
    Exchange early = send("a", "ok");

    assertThat(runsOf("a")).isEqualTo(1);
    assertThat(early.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.InFlight.class);

    clock.advance(LEASE.plusSeconds(1));
    send("a", "ok");

    assertThat(runsOf("a")).isEqualTo(2);
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void nonEagerModeAddsTheKeyOnlyAfterTheRouteSucceeded() throws Exception {
    route(r -> r.idempotentConsumer(header("id"), repo).eager(false).process(this::work));

    send("a", "fail");
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Absent.class);

    send("a", "ok");
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
    send("a", "ok");

    assertThat(runsOf("a")).isEqualTo(2);
  }

  @Test
  void withoutSkipDuplicateADuplicateGoesOnMarkedAndLeavesTheKeyCommitted() throws Exception {
    route(
        r ->
            r.idempotentConsumer(header("id"), repo)
                .skipDuplicate(false)
                .filter(exchangeProperty(Exchange.DUPLICATE_MESSAGE).isEqualTo(true))
                .process(e -> duplicatesSeen.incrementAndGet())
                .stop()
                .end()
                .process(this::work));

    send("a", "x");
    send("a", "x");

    assertThat(runsOf("a")).isEqualTo(1);
    assertThat(duplicatesSeen).hasValue(1);
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void completionEagerCommitsWhenTheBlockEndsEvenIfTheRouteFailsLater() throws Exception {
    route(
        r ->
            r.idempotentConsumer(header("id"), repo)
                .completionEager(true)
                .process(this::work)
                .end()
                .process(this::failAfterTheBlock));

    Exchange first = send("a", "x");
    assertThat(first.getException()).hasMessageContaining("after the block");
    send("a", "x");

    assertThat(runsOf("a")).isEqualTo(1);
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void withoutCompletionEagerALaterFailureReleasesTheKey() throws Exception {
    route(
        r ->
            r.idempotentConsumer(header("id"), repo)
                .completionEager(false)
                .process(this::work)
                .end()
                .process(this::failAfterTheBlock));

    send("a", "x");
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Absent.class);
    send("a", "x");

    assertThat(runsOf("a")).isEqualTo(2);
  }

  private void failAfterTheBlock(Exchange e) {
    throw new IllegalStateException("a step after the block failed");
  }

  @Test
  void clearForgetsOnlyItsOwnScope() throws Exception {
    IdemIdempotentRepository other =
        IdemIdempotentRepository.of(repository(Scope.of(scope.pipeline(), "other")));
    try {
      assertThat(repo.add("a")).isTrue();
      assertThat(repo.confirm("a")).isTrue();
      assertThat(other.add("a")).isTrue();
      assertThat(other.confirm("a")).isTrue();

      repo.clear();

      assertThat(repo.contains("a")).isFalse();
      assertThat(other.contains("a")).isTrue();
    } finally {
      other.clear();
    }
  }

  @Test
  void manyThreadsWithOneMessageIdRunTheRouteBodyOnce() throws Exception {
    AtomicReference<CountDownLatch> holding = new AtomicReference<>();
    route(
        r ->
            r.idempotentConsumer(header("id"), repo)
                .process(
                    e -> {
                      work(e);
                      // Hold the key until every sender has tried, so they meet it in flight.
                      holding.get().await(10, TimeUnit.SECONDS);
                    }));
    int threads = 16;
    int rounds = 5;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < rounds; round++) {
        String id = "storm-" + round;
        holding.set(new CountDownLatch(1));
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger tried = new AtomicInteger();
        List<Future<Exchange>> sent = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          sent.add(
              pool.submit(
                  () -> {
                    start.await();
                    Exchange e = send(id, "x");
                    tried.incrementAndGet();
                    return e;
                  }));
        }
        start.countDown();
        // Every sender but the holder returns as a duplicate while the holder waits.
        await().atMost(Duration.ofSeconds(20)).until(() -> tried.get() >= threads - 1);
        holding.get().countDown();
        for (Future<Exchange> f : sent) {
          assertThat(f.get(20, TimeUnit.SECONDS).getException()).isNull();
        }
        assertThat(runsOf(id)).as("route body runs for %s", id).isEqualTo(1);
        assertThat(repo.inspect(id)).isInstanceOf(KeyState.Committed.class);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
