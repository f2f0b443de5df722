package dev.idem.server.source.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.NatsSourceSettings;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.SourceMeters;
import dev.idem.server.support.LogCapture;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestEdge;
import dev.idem.server.support.TestParts;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.nats.client.JetStream;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The JetStream source against the real NATS server: each test makes its own stream and consumer
 * (unique names), feeds a pipeline over the real memory store behind an off switch, and checks what
 * the sink got and that the consumer has nothing pending or unacked at the end.
 */
class NatsSourceTest {
  private NatsTestServer nats;
  private final SwitchableStore store = new SwitchableStore();
  private final RecordingSink sink = new RecordingSink();
  private SourceMeters meters;
  private NatsSource source;

  @BeforeEach
  void connect() throws Exception {
    nats = NatsTestServer.connect();
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (source != null) {
      source.close();
    }
    if (nats != null) {
      nats.close();
    }
  }

  private NatsSource start(String stream, String extraSource, String dedupKey) {
    String yaml =
        "pipelines:\n"
            + "  - id: nats-test\n"
            + "    source:\n"
            + "      nats:\n"
            + "        url: "
            + nats.url
            + "\n"
            + "        stream: "
            + stream
            + "\n"
            + "        durable: idem\n"
            + "        batch: 200\n"
            + "        backoff: 100ms\n"
            + "        max_backoff: 1s\n"
            + extraSource
            + "    dedup:\n"
            + "      window: 1h\n"
            + dedupKey
            + "    deliver:\n"
            + "      stdout: {}\n";
    PipelineSettings p = ConfigLoader.parse("nats-test.yaml", yaml, n -> null).pipelines().get(0);
    Pipeline pipeline =
        Pipeline.builder(p)
            .keys(ServiceAssembly.keys(p, new TestEdge(), TimeSource.system()))
            .dedup(
                Deduplicator.builder(store, Scope.of(p.id())).config(p.dedup().config()).build(),
                store)
            .deliverer(TestParts.retrying(sink, 0))
            .build();
    meters = new SourceMeters(new SimpleMeterRegistry(), p.id(), "nats");
    source = new NatsSource((NatsSourceSettings) p.source(), pipeline, meters);
    source.start();
    return source;
  }

  private static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void tenThousandMessagesWithThirtyPercentDuplicatesAreDeliveredOnceEach() throws Exception {
    String subject = nats.subject("orders");
    String stream = nats.stream("SRC", subject);
    JetStream js = nats.nc.jetStream();
    int total = 10_000;
    int unique = 7_000;
    List<CompletableFuture<PublishAck>> acks = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      int order = i < unique ? i : (i * 7919) % unique; // the last 3,000 repeat earlier orders
      Headers h = new Headers().put("X-Order-Id", "ord-" + order);
      acks.add(js.publishAsync(subject, h, json("{\"order\":" + order + "}")));
    }
    CompletableFuture.allOf(acks.toArray(new CompletableFuture<?>[0])).join();

    start(stream, "", "      key: header(\"X-Order-Id\")\n");

    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> sink.delivered().size() >= unique && nats.settled(stream, "idem"));
    List<Delivery> delivered = sink.delivered();
    assertThat(delivered).hasSize(unique);
    Set<String> keys = new HashSet<>();
    for (Delivery d : delivered) {
      keys.add(d.idempotencyKey());
    }
    assertThat(keys).hasSize(unique);
    assertThat(meters.total(SourceMeters.Kind.ACCEPTED)).isEqualTo(unique);
    assertThat(meters.total(SourceMeters.Kind.DUPLICATE)).isEqualTo(total - unique);
    assertThat(nats.consumer(stream, "idem").getNumAckPending()).isZero();
  }

  @Test
  void aPoisonMessageGoesToTheDeadLetterWithItsReasonAndTheRestContinue() throws Exception {
    String subject = nats.subject("in");
    String dlqSubject = nats.subject("dlq");
    String stream = nats.stream("SRC", subject);
    String dlq = nats.stream("DLQ", dlqSubject);
    JetStream js = nats.nc.jetStream();
    for (int i = 0; i < 5; i++) {
      js.publish(subject, new Headers().put("Nats-Msg-Id", "a" + i), json("{\"n\":" + i + "}"));
    }
    js.publish(subject, new Headers().put("Nats-Msg-Id", "bad-json"), json("not json {"));
    js.publish(subject, json("{\"no\":\"key\"}")); // no Nats-Msg-Id: the default key is missing
    for (int i = 5; i < 10; i++) {
      js.publish(subject, new Headers().put("Nats-Msg-Id", "a" + i), json("{\"n\":" + i + "}"));
    }

    start(stream, "        dead_letter: " + dlqSubject + "\n", "");

    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                sink.delivered().size() == 10
                    && nats.settled(stream, "idem")
                    && nats.jsm.getStreamInfo(dlq).getStreamState().getMsgCount() == 2);
    assertThat(sink.bodies()).hasSize(10).allMatch(b -> b.startsWith("{\"n\":"));
    JetStreamSubscription read =
        js.subscribe(
            dlqSubject, PullSubscribeOptions.builder().stream(dlq).durable("reader").build());
    List<Message> letters = read.fetch(10, Duration.ofSeconds(2));
    Map<String, Message> byReason = new HashMap<>();
    for (Message m : letters) {
      byReason.put(m.getHeaders().getFirst("Idem-Reason"), m);
      m.ack();
    }
    assertThat(byReason).containsOnlyKeys("malformed_json", "missing_key");
    Message bad = byReason.get("malformed_json");
    assertThat(new String(bad.getData(), StandardCharsets.UTF_8)).isEqualTo("not json {");
    assertThat(bad.getHeaders().getFirst("Idem-Original-Msg-Id")).isEqualTo("bad-json");
    assertThat(bad.getHeaders().getFirst("Idem-Source-Stream")).isEqualTo(stream);
    assertThat(bad.getHeaders().getFirst("Idem-Source-Sequence")).isEqualTo("6");
    assertThat(byReason.get("missing_key").getHeaders().getFirst("Idem-Reason-Message"))
        .contains("Nats-Msg-Id");
    assertThat(meters.total(SourceMeters.Kind.DEAD_LETTERED)).isEqualTo(2);
  }

  @Test
  void withoutADeadLetterABadMessageIsLoggedTerminatedAndCounted() throws Exception {
    String subject = nats.subject("in");
    String stream = nats.stream("SRC", subject);
    JetStream js = nats.nc.jetStream();
    js.publish(subject, new Headers().put("Nats-Msg-Id", "x"), json("[1,"));
    js.publish(subject, new Headers().put("nats-msg-id", "y"), json("{\"ok\":true}"));

    start(stream, "", "");

    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> sink.delivered().size() == 1 && nats.settled(stream, "idem"));
    assertThat(meters.total(SourceMeters.Kind.REJECTED)).isEqualTo(1);
    assertThat(meters.total(SourceMeters.Kind.SKIPPED)).isEqualTo(1);
  }

  @Test
  void aStoreOutagePausesConsumptionWithNothingAckedAndItResumesWhenTheStoreReturns()
      throws Exception {
    String subject = nats.subject("in");
    String stream = nats.stream("SRC", subject);
    JetStream js = nats.nc.jetStream();
    for (int i = 0; i < 50; i++) {
      js.publish(subject, new Headers().put("Nats-Msg-Id", "m" + i), json("{\"n\":" + i + "}"));
    }
    store.down(true);

    LogCapture logs = LogCapture.idem();
    start(stream, "", "");

    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> meters.total(SourceMeters.Kind.UNAVAILABLE) >= 100); // two rounds at least
    assertThat(sink.delivered()).isEmpty();
    assertThat(nats.consumer(stream, "idem").getAckFloor().getStreamSequence()).isZero();
    assertThat(meters.total(SourceMeters.Kind.ACCEPTED)).isZero();

    store.down(false);

    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> sink.delivered().size() == 50 && nats.settled(stream, "idem"));
    Set<String> keys = new HashSet<>();
    sink.delivered().forEach(d -> keys.add(d.idempotencyKey()));
    assertThat(keys).hasSize(50);

    // And the outage was logged once when it began and once when it ended, not once per message
    logs.close();
    assertThat(logs.lines(l -> l.contains("the dedup store is unavailable"))).hasSize(1);
    assertThat(logs.lines(l -> l.contains("the dedup store answers again"))).hasSize(1);
    assertThat(logs.lines(l -> l.contains("store unavailable:"))).isEmpty(); // the per-key line
  }

  @Test
  void aFailedDeliveryIsRetriedThenDeadLetteredAfterMaxAttempts() throws Exception {
    String subject = nats.subject("in");
    String dlqSubject = nats.subject("dlq");
    String stream = nats.stream("SRC", subject);
    String dlq = nats.stream("DLQ", dlqSubject);
    JetStream js = nats.nc.jetStream();
    sink.failNext(1);
    js.publish(subject, new Headers().put("Nats-Msg-Id", "once"), json("{\"n\":1}"));

    start(stream, "        max_attempts: 2\n        dead_letter: " + dlqSubject + "\n", "");

    // The first delivery fails (nak with backoff); the redelivery goes through.
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> sink.delivered().size() == 1 && nats.settled(stream, "idem"));
    assertThat(meters.total(SourceMeters.Kind.FAILED)).isEqualTo(1);
    assertThat(meters.total(SourceMeters.Kind.RETRIED)).isEqualTo(1);

    sink.failNext(1_000);
    js.publish(subject, new Headers().put("Nats-Msg-Id", "never"), json("{\"n\":2}"));
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                nats.jsm.getStreamInfo(dlq).getStreamState().getMsgCount() == 1
                    && nats.settled(stream, "idem"));
    assertThat(sink.delivered()).hasSize(1);
    assertThat(meters.total(SourceMeters.Kind.DEAD_LETTERED)).isEqualTo(1);
  }

  @Test
  void inProgressKeepsLongWorkFromBeingRedelivered() throws Exception {
    String subject = nats.subject("in");
    String stream = nats.stream("SRC", subject);
    java.util.concurrent.atomic.AtomicBoolean stalled =
        new java.util.concurrent.atomic.AtomicBoolean();
    store.onReserve(
        () -> {
          if (stalled.compareAndSet(false, true)) {
            try {
              Thread.sleep(3_500); // three ack waits of work on one batch
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
    nats.nc.jetStream().publish(subject, new Headers().put("Nats-Msg-Id", "slow"), json("{}"));

    start(stream, "        ack_wait: 1s\n", "");

    long redelivered = 0;
    long giveUp = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (sink.delivered().isEmpty() && System.nanoTime() < giveUp) {
      redelivered = Math.max(redelivered, nats.consumer(stream, "idem").getRedelivered());
      Thread.sleep(100);
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> nats.settled(stream, "idem"));
    assertThat(stalled).isTrue();
    assertThat(redelivered).as("messages the server redelivered while the work ran").isZero();
    assertThat(meters.total(SourceMeters.Kind.ACCEPTED)).isEqualTo(1);
    assertThat(meters.total(SourceMeters.Kind.DUPLICATE)).isZero();
  }

  @Test
  void startFailsWithWhatToDoWhenTheStreamDoesNotExist() {
    String missing = nats.name("MISSING");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> start(missing, "", ""))
        .hasMessageContaining("stream " + missing + " does not exist")
        .hasMessageContaining("nats stream add");
    source = null;
  }
}
