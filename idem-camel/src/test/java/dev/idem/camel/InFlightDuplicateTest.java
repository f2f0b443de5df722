package dev.idem.camel;

import static org.apache.camel.builder.Builder.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The in-flight gap of Camel's {@code idempotentConsumer} (its repository's {@code add} answers the
 * same {@code false} for "done" and "in flight", so an in-flight duplicate is dropped and lost if
 * the first attempt then fails), shown with Camel's own memory repository and with Idem's, and
 * closed by {@link IdemConsumerProcessor}.
 */
class InFlightDuplicateTest {
  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final AtomicInteger inFlightAnswers = new AtomicInteger();
  private final Deduplicator dedup =
      Deduplicator.builder(store, Scope.of("camel-inflight"))
          .listener(
              new DedupListener() {
                @Override
                public void onInFlight(Scope scope, DedupKey key) {
                  inFlightAnswers.incrementAndGet();
                }
              })
          .build();
  private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
  private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
  private CamelContext camel;
  private ProducerTemplate producer;

  @BeforeEach
  void context() {
    camel = new DefaultCamelContext();
  }

  @AfterEach
  void close() {
    camel.stop();
    store.close();
  }

  private void start(RouteBuilder routes) throws Exception {
    camel.addRoutes(routes);
    camel.start();
    producer = camel.createProducerTemplate();
  }

  /** The work: a body "hold" waits at the id's gate, then fails if the body is "hold-then-fail". */
  private final Processor work =
      e -> {
        String id = e.getMessage().getHeader("id", String.class);
        String body = e.getMessage().getBody(String.class);
        runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        if (body.startsWith("hold")) {
          gates.get(id).await(20, TimeUnit.SECONDS);
        }
        if (body.endsWith("fail")) {
          throw new IllegalStateException("first attempt failed");
        }
      };

  private CompletableFuture<Exchange> sendAsync(String id, String body) {
    return producer.asyncSend(
        "direct:in",
        e -> {
          e.getMessage().setHeader("id", id);
          e.getMessage().setBody(body);
        });
  }

  private Exchange send(String id, String body) {
    return producer.send(
        "direct:in",
        e -> {
          e.getMessage().setHeader("id", id);
          e.getMessage().setBody(body);
        });
  }

  private int runsOf(String id) {
    AtomicInteger n = runs.get(id);
    return n == null ? 0 : n.get();
  }

  private void camelsOwnConsumerLosesTheMessage(IdempotentRepository repo) throws Exception {
    start(
        new RouteBuilder() {
          @Override
          public void configure() {
            from("direct:in").idempotentConsumer(header("id"), repo).process(work);
          }
        });
    gates.put("m1", new CountDownLatch(1));
    CompletableFuture<Exchange> first = sendAsync("m1", "hold-then-fail");
    await().atMost(Duration.ofSeconds(10)).until(() -> runsOf("m1") == 1);

    Exchange duplicate = send("m1", "retry");
    gates.get("m1").countDown();
    Exchange firstDone = first.get(20, TimeUnit.SECONDS);

    // The resend arrived while the first attempt was in flight: dropped as a duplicate...
    assertThat(duplicate.getException()).isNull();
    assertThat(duplicate.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();
    // ...and the first attempt failed: the work never succeeded, and nobody will retry it.
    assertThat(firstDone.getException()).hasMessageContaining("first attempt failed");
    assertThat(runsOf("m1")).isEqualTo(1);
  }

  @Test
  void camelsIdempotentConsumerDropsAnInFlightDuplicateWithCamelsMemoryRepository()
      throws Exception {
    camelsOwnConsumerLosesTheMessage(MemoryIdempotentRepository.memoryIdempotentRepository());
  }

  @Test
  void camelsIdempotentConsumerDropsAnInFlightDuplicateWithIdemsRepositoryToo() throws Exception {
    IdemIdempotentRepository repo = IdemIdempotentRepository.of(dedup);
    camelsOwnConsumerLosesTheMessage(repo);
    assertThat(repo.inspect("m1")).isInstanceOf(KeyState.Absent.class);
  }

  private RouteBuilder idemConsumerRoute(IdemConsumerProcessor consumer) {
    return new RouteBuilder() {
      @Override
      public void configure() {
        onException(KeyInFlightException.class).maximumRedeliveries(500).redeliveryDelay(10);
        from("direct:in").process(consumer).process(work);
      }
    };
  }

  @Test
  void idemConsumerRetriesAnInFlightDuplicateAndRunsItWhenTheFirstAttemptFails() throws Exception {
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));
    gates.put("m1", new CountDownLatch(1));
    CompletableFuture<Exchange> first = sendAsync("m1", "hold-then-fail");
    await().atMost(Duration.ofSeconds(10)).until(() -> runsOf("m1") == 1);

    CompletableFuture<Exchange> resend = sendAsync("m1", "retry");
    await().atMost(Duration.ofSeconds(10)).until(() -> inFlightAnswers.get() >= 2);
    assertThat(resend).isNotDone();
    gates.get("m1").countDown();

    assertThat(first.get(20, TimeUnit.SECONDS).getException())
        .hasMessageContaining("first attempt failed");
    Exchange resent = resend.get(20, TimeUnit.SECONDS);
    assertThat(resent.getException()).isNull();
    assertThat(runsOf("m1")).isEqualTo(2);
    assertThat(dedup.inspect(dev.idem.key.KeyEncoding.ofString("m1")))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void idemConsumerSkipsAnInFlightDuplicateOnceTheFirstAttemptCommits() throws Exception {
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));
    gates.put("m1", new CountDownLatch(1));
    CompletableFuture<Exchange> first = sendAsync("m1", "hold");
    await().atMost(Duration.ofSeconds(10)).until(() -> runsOf("m1") == 1);

    CompletableFuture<Exchange> resend = sendAsync("m1", "retry");
    await().atMost(Duration.ofSeconds(10)).until(() -> inFlightAnswers.get() >= 1);
    gates.get("m1").countDown();

    assertThat(first.get(20, TimeUnit.SECONDS).getException()).isNull();
    Exchange resent = resend.get(20, TimeUnit.SECONDS);
    assertThat(resent.getException()).isNull();
    assertThat(resent.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();
    assertThat(runsOf("m1")).isEqualTo(1);
  }

  @Test
  void idemConsumerStopsADuplicateOrLetsItOnMarked() throws Exception {
    AtomicInteger afterMarked = new AtomicInteger();
    camel.addRoutes(
        new RouteBuilder() {
          @Override
          public void configure() {
            from("direct:marked")
                .process(
                    IdemConsumerProcessor.builder(dedup, header("id")).markDuplicates().build())
                .process(e -> afterMarked.incrementAndGet());
          }
        });
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));

    send("a", "ok");
    Exchange dup = send("a", "ok");
    assertThat(runsOf("a")).isEqualTo(1);
    assertThat(dup.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();

    Exchange marked = producer.send("direct:marked", e -> e.getMessage().setHeader("id", "a"));
    assertThat(marked.getProperty(Exchange.DUPLICATE_MESSAGE, Boolean.class)).isTrue();
    assertThat(afterMarked).hasValue(1);
  }

  @Test
  void idemConsumerReleasesTheKeyWhenTheRouteFailsSoAResendRuns() throws Exception {
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));

    assertThat(send("a", "fail").getException()).hasMessageContaining("first attempt failed");
    assertThat(send("a", "ok").getException()).isNull();
    send("a", "ok");

    assertThat(runsOf("a")).isEqualTo(2);
  }

  @Test
  void idemConsumerFailsAnExchangeWithoutAMessageIdSayingWhatToDo() throws Exception {
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));

    Exchange e = producer.send("direct:in", x -> x.getMessage().setBody("no id"));

    assertThat(e.getException())
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("no message id")
        .hasMessageContaining("set it on every message");
    assertThat(runs).isEmpty();
  }

  @Test
  void idemConsumerUnderManyThreadsWithOneMessageIdRunsTheWorkOnce() throws Exception {
    start(idemConsumerRoute(IdemConsumerProcessor.builder(dedup, header("id")).build()));
    int threads = 16;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 5; round++) {
        String id = "storm-" + round;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Exchange>> sent = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          sent.add(
              pool.submit(
                  () -> {
                    start.await();
                    return send(id, "ok");
                  }));
        }
        start.countDown();
        for (Future<Exchange> f : sent) {
          assertThat(f.get(30, TimeUnit.SECONDS).getException()).isNull();
        }
        assertThat(runsOf(id)).as("work runs for %s", id).isEqualTo(1);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
