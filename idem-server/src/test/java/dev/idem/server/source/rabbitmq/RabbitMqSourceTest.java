package dev.idem.server.source.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.GetResponse;
import dev.idem.Deduplicator;
import dev.idem.IdemException;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.RabbitMqSourceSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.Sources;
import dev.idem.server.support.LogCapture;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The RabbitMQ source against the real broker: acks, requeues, dead letters, outages. */
class RabbitMqSourceTest {
  private TestBroker broker;
  private final SwitchableStore store = new SwitchableStore();
  private final RecordingSink sink = new RecordingSink();
  private final IdemMetrics metrics =
      new IdemMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  private final List<EventSource> sources = new ArrayList<>();

  @BeforeEach
  void broker() throws Exception {
    broker = TestBroker.require();
  }

  @AfterEach
  void cleanUp() throws Exception {
    sources.forEach(EventSource::close);
    if (broker != null) {
      broker.close();
    }
  }

  private RabbitMqSource source(String queue, String options) {
    String yaml =
        "store: { type: memory }\n"
            + "pipelines:\n"
            + "  - id: rmq\n"
            + "    source:\n"
            + "      rabbitmq: { uri: \""
            + broker.uri
            + "\", queue: "
            + queue
            + (options.isEmpty() ? "" : ", " + options)
            + " }\n"
            + "    dedup: { window: 1h }\n"
            + "    deliver: { stdout: {} }\n";
    IdemConfig config = ConfigLoader.parse("test.yaml", yaml, name -> null);
    PipelineSettings p = config.pipelines().get(0);
    Pipeline pipeline =
        Pipeline.builder(p)
            .keys(ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system()))
            .dedup(
                Deduplicator.builder(store, Scope.of(p.id())).config(p.dedup().config()).build(),
                store)
            .deliverer(TestParts.retrying(sink, 0))
            .meters(metrics.pipeline(p.id()))
            .build();
    RabbitMqSource source =
        (RabbitMqSource)
            Sources.open(
                p.source(),
                pipeline,
                new Sources.Context(metrics.pipeline(p.id()), TimeSource.system()));
    sources.add(source);
    return source;
  }

  private static String idOf(Delivery d) {
    String body = new String(d.body(), StandardCharsets.UTF_8);
    return body.substring(
        body.indexOf("\"id\":\"") + 6, body.indexOf("\"", body.indexOf("\"id\":\"") + 6));
  }

  @Test
  void tenThousandMessagesWithThirtyPercentDuplicatesAreEachDeliveredOnceAndAllAcked()
      throws Exception {
    // Given 7,000 distinct messages and 3,000 duplicates of them (same message_id), interleaved
    String[] q = broker.queueWithDeadLetters("dups");
    Random random = new Random(42);
    List<Integer> published = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      int id =
          published.size() < 100 || random.nextInt(10) >= 3
              ? i
              : published.get(random.nextInt(published.size()));
      published.add(id);
    }
    Set<String> distinct = new HashSet<>();
    for (int id : published) {
      distinct.add("m-" + id);
      broker.publish(q[0], "m-" + id, "{\"id\":\"m-" + id + "\",\"n\":" + id + "}");
    }
    broker.confirm();
    int duplicates = published.size() - distinct.size();
    assertThat(duplicates).isBetween(2_500, 3_500);

    // When the source consumes them with four consumers
    RabbitMqSource source = source(q[0], "prefetch: 100, consumers: 4, requeue_delay: 20ms");
    source.start();

    // Then each distinct message is delivered exactly once, and every message is acked
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                source.meters().total(RabbitMqSourceMeters.Kind.ACCEPTED)
                        + source.meters().total(RabbitMqSourceMeters.Kind.DUPLICATE)
                    == 10_000);
    source.close();
    List<String> ids = sink.delivered().stream().map(RabbitMqSourceTest::idOf).toList();
    assertThat(ids).hasSize(distinct.size()).doesNotHaveDuplicates();
    assertThat(new HashSet<>(ids)).isEqualTo(distinct);
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.DUPLICATE)).isEqualTo(duplicates);
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.DEAD_LETTERED)).isZero();
    assertThat(broker.ready(q[0])).as("nothing left unacknowledged in the queue").isZero();
    assertThat(broker.ready(q[1])).isZero();
  }

  @Test
  void aPoisonMessageGoesToTheDeadLetterExchangeAndTheRestContinue() throws Exception {
    // Given a good message, one not JSON, one without message_id, and another good one
    String[] q = broker.queueWithDeadLetters("poison");
    broker.publish(q[0], "a", "{\"id\":\"a\"}");
    broker.publish(q[0], "b", "not json {");
    broker.channel.basicPublish(
        "", q[0], null, "{\"id\":\"no-key\"}".getBytes(StandardCharsets.UTF_8));
    broker.publish(q[0], "c", "{\"id\":\"c\"}");
    broker.confirm();

    // When the source consumes them
    RabbitMqSource source = source(q[0], "prefetch: 1");
    source.start();

    // Then the good ones are delivered and the bad ones dead-lettered, none left in the queue
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> sink.delivered().size() == 2 && broker.ready(q[1]) == 2);
    assertThat(sink.delivered().stream().map(RabbitMqSourceTest::idOf)).containsExactly("a", "c");
    List<GetResponse> dead = broker.drain(q[1]);
    assertThat(dead)
        .extracting(r -> new String(r.getBody(), StandardCharsets.UTF_8))
        .containsExactly("not json {", "{\"id\":\"no-key\"}");
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.REJECTED)).isEqualTo(2);
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.DEAD_LETTERED)).isEqualTo(2);
    source.close();
    assertThat(broker.ready(q[0])).isZero();
  }

  @Test
  void aStoreOutagePausesConsumptionWithNothingAckedAndItResumesWhenTheStoreReturns()
      throws Exception {
    // Given the store is down and 200 messages wait
    String[] q = broker.queueWithDeadLetters("outage");
    store.down(true);
    for (int i = 0; i < 200; i++) {
      broker.publish(q[0], "o-" + i, "{\"id\":\"o-" + i + "\"}");
    }
    broker.confirm();
    RabbitMqSource source =
        source(q[0], "prefetch: 20, consumers: 2, requeue_delay: 20ms, max_requeue_delay: 100ms");
    LogCapture logs = LogCapture.idem();
    source.start();

    // When it has tried them for a while, nothing was delivered or acknowledged
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> source.meters().total(RabbitMqSourceMeters.Kind.UNAVAILABLE) >= 100);
    assertThat(sink.delivered()).isEmpty();
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.ACCEPTED)).isZero();
    assertThat(source.meters().redeliveredTotal()).isPositive();
    assertThat(broker.ready(q[0]))
        .as("at most the prefetch of each consumer in hand")
        .isGreaterThanOrEqualTo(160);

    // Then when the store returns, every message is delivered once and acknowledged
    store.down(false);
    await().atMost(Duration.ofSeconds(30)).until(() -> sink.delivered().size() == 200);
    await().atMost(Duration.ofSeconds(10)).until(() -> broker.ready(q[0]) == 0);
    source.close();
    assertThat(sink.delivered().stream().map(RabbitMqSourceTest::idOf)).doesNotHaveDuplicates();
    assertThat(broker.ready(q[0])).isZero();
    assertThat(broker.ready(q[1])).isZero();

    // And the outage was logged once when it began and once when it ended, not once per message
    logs.close();
    assertThat(logs.lines(l -> l.contains("the dedup store is unavailable"))).hasSize(1);
    assertThat(logs.lines(l -> l.contains("the dedup store answers again"))).hasSize(1);
    assertThat(logs.lines(l -> l.contains("store unavailable:"))).isEmpty(); // the per-key line
  }

  @Test
  void aMessageWhoseDeliveryKeepsFailingIsRetriedThenDeadLettered() throws Exception {
    // Given a downstream that fails every attempt
    String[] q = broker.queueWithDeadLetters("failing");
    sink.failNext(1_000);
    broker.publish(q[0], "f", "{\"id\":\"f\"}");
    broker.confirm();

    // When the source consumes it with three attempts
    RabbitMqSource source = source(q[0], "max_attempts: 3, requeue_delay: 10ms");
    source.start();

    // Then it is tried three times and lands in the dead-letter queue
    await().atMost(Duration.ofSeconds(20)).until(() -> broker.ready(q[1]) == 1);
    assertThat(sink.attempts()).isEqualTo(3);
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.FAILED)).isEqualTo(3);
    assertThat(source.meters().total(RabbitMqSourceMeters.Kind.RETRIED)).isEqualTo(2);
    source.close();
    assertThat(broker.ready(q[0])).isZero();
  }

  @Test
  void keysReadAmqpHeadersAndTheMessageIdProperty() throws Exception {
    // Given a pipeline keyed on a header, and two messages with the same header value
    String q = broker.queue("header");
    String yamlKey = "header(\\\"X-Order-Id\\\")";
    broker.publish(q, "1", Map.of("X-Order-Id", "o-7"), "{\"id\":\"first\"}");
    broker.publish(q, "2", Map.of("x-order-id", "o-7"), "{\"id\":\"second\"}");
    broker.confirm();
    String yaml =
        "store: { type: memory }\n"
            + "pipelines:\n"
            + "  - id: rmqh\n"
            + "    source:\n"
            + "      rabbitmq: { uri: \""
            + broker.uri
            + "\", queue: "
            + q
            + ", prefetch: 1 }\n"
            + "    dedup: { key: \""
            + yamlKey
            + "\" }\n"
            + "    deliver: { stdout: {} }\n";
    PipelineSettings p = ConfigLoader.parse("t.yaml", yaml, n -> null).pipelines().get(0);
    Pipeline pipeline =
        Pipeline.builder(p)
            .keys(ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system()))
            .dedup(Deduplicator.builder(store, Scope.of(p.id())).build(), store)
            .deliverer(TestParts.retrying(sink, 0))
            .build();
    RabbitMqSource source =
        new RabbitMqSource(
            (RabbitMqSourceSettings) p.source(),
            pipeline,
            new Sources.Context(metrics.pipeline(p.id()), TimeSource.system()));
    sources.add(source);

    // When both are consumed
    source.start();

    // Then the second is a duplicate of the first
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                broker.ready(q) == 0
                    && source.meters().total(RabbitMqSourceMeters.Kind.DUPLICATE) == 1);
    assertThat(sink.delivered().stream().map(RabbitMqSourceTest::idOf)).containsExactly("first");
  }

  @Test
  void aMissingQueueIsAClearErrorAtStart() throws Exception {
    RabbitMqSource source = source(TestBroker.unique("missing"), "");

    assertThatThrownBy(source::start)
        .isInstanceOf(IdemException.class)
        .hasMessageContaining("does not exist")
        .hasMessageContaining("declare it");
  }
}
