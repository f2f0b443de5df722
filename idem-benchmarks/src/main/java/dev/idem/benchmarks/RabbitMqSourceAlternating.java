package dev.idem.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.RabbitMqSourceSettings;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.Sources;
import dev.idem.spi.DedupStore;
import dev.idem.store.memory.MemoryDedupStore;
import dev.idem.store.redis.RedisDedupStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 10's RabbitMQ benchmark: Idem's RabbitMQ source consuming with dedup (memory store, and
 * Redis when {@code --redis} is given) against a bare consumer on the same client library
 * (amqp-client), broker, prefetch, number of consumers and acknowledgement mode (manual, one {@code
 * basic.ack} per message) doing no dedup. Each round publishes {@code --messages} messages (30%
 * duplicate {@code message_id}s) to a fresh queue of its own, then times their consumption until
 * every message is acknowledged; the variants alternate within each round. Prints messages per
 * second per variant and round, and each ratio to the bare consumer of the same round.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.RabbitMqSourceAlternating \
 *   --uri amqp://guest:guest@127.0.0.1:5672/ --messages 50000 --prefetch 50 --consumers 4 \
 *   --rounds 5 --redis redis://127.0.0.1:6379
 * </pre>
 *
 * <p>Queues are named {@code idem-bench-...} and deleted after each run.
 */
public final class RabbitMqSourceAlternating {
  private RabbitMqSourceAlternating() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    URI uri = URI.create(opts.getOrDefault("uri", "amqp://guest:guest@127.0.0.1:5672/"));
    int messages = Integer.parseInt(opts.getOrDefault("messages", "20000"));
    int prefetch = Integer.parseInt(opts.getOrDefault("prefetch", "50"));
    int consumers = Integer.parseInt(opts.getOrDefault("consumers", "4"));
    int rounds = Integer.parseInt(opts.getOrDefault("rounds", "3"));
    String redis = opts.get("redis");
    List<String> variants = new ArrayList<>(List.of("bare", "memory"));
    if (redis != null) {
      variants.add("redis");
    }
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    factory.setVirtualHost(RabbitMqSourceSettings.virtualHost(uri));
    System.out.printf(
        Locale.ROOT,
        "# RabbitMQ source: %d messages (30%% duplicates), prefetch %d, consumers %d, %d rounds%n",
        messages,
        prefetch,
        consumers,
        rounds);
    System.out.println("round,variant,seconds,messages_per_s,ratio_to_bare");
    try (Connection admin = factory.newConnection("idem-bench-admin")) {
      for (int round = 1; round <= rounds; round++) {
        double bare = Double.NaN;
        // alternate the order each round so neither side always runs on a warmer broker
        List<String> order = new ArrayList<>(variants);
        if (round % 2 == 0) {
          java.util.Collections.reverse(order);
        }
        Map<String, Double> rates = new HashMap<>();
        for (String v : order) {
          String queue = "idem-bench-" + UUID.randomUUID().toString().substring(0, 8);
          try (Channel ch = admin.createChannel()) {
            ch.queueDeclare(queue, false, false, false, null);
            publish(ch, queue, messages);
            long nanos =
                v.equals("bare")
                    ? bare(factory, queue, messages, prefetch, consumers)
                    : idem(uri, queue, messages, prefetch, consumers, v, redis);
            rates.put(v, messages / (nanos / 1e9));
            rates.put(v + "-s", nanos / 1e9);
            ch.queueDelete(queue);
          }
        }
        bare = rates.get("bare");
        for (String v : variants) {
          System.out.printf(
              Locale.ROOT,
              "%d,%s,%.2f,%.0f,%.2f%n",
              round,
              v,
              rates.get(v + "-s"),
              rates.get(v),
              rates.get(v) / bare);
        }
      }
    }
  }

  private static void publish(Channel ch, String queue, int messages) throws Exception {
    ch.confirmSelect();
    Random random = new Random(1);
    List<Integer> ids = new ArrayList<>(messages);
    for (int i = 0; i < messages; i++) {
      int id =
          ids.size() < 100 || random.nextInt(10) >= 3 ? i : ids.get(random.nextInt(ids.size()));
      ids.add(id);
      AMQP.BasicProperties props =
          new AMQP.BasicProperties.Builder().messageId("m-" + id).deliveryMode(2).build();
      ch.basicPublish(
          "",
          queue,
          props,
          ("{\"id\":\"m-" + id + "\",\"amount\":" + i + ",\"currency\":\"EUR\"}")
              .getBytes(StandardCharsets.UTF_8));
      if (i % 1000 == 999) {
        ch.waitForConfirmsOrDie(60_000);
      }
    }
    ch.waitForConfirmsOrDie(60_000);
  }

  /** A consumer doing no dedup: manual ack per message, same prefetch and consumers. */
  private static long bare(
      ConnectionFactory factory, String queue, int messages, int prefetch, int consumers)
      throws Exception {
    CountDownLatch done = new CountDownLatch(messages);
    AtomicLong sink = new AtomicLong();
    long start = System.nanoTime(); // the connection is timed, as the Idem source's is
    try (Connection c = factory.newConnection("idem-bench-bare")) {
      for (int i = 0; i < consumers; i++) {
        Channel ch = c.createChannel();
        ch.basicQos(prefetch);
        ch.basicConsume(
            queue,
            false,
            new DefaultConsumer(ch) {
              @Override
              public void handleDelivery(
                  String tag, Envelope env, AMQP.BasicProperties props, byte[] body)
                  throws java.io.IOException {
                sink.addAndGet(body.length);
                getChannel().basicAck(env.getDeliveryTag(), false);
                done.countDown();
              }
            });
      }
      if (!done.await(10, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the bare consumer did not finish");
      }
      return System.nanoTime() - start;
    }
  }

  /** Idem's RabbitMQ source with dedup on the message_id, delivering to a no-op sink. */
  private static long idem(
      URI uri, String queue, int messages, int prefetch, int consumers, String store, String redis)
      throws Exception {
    String yaml =
        "store: { type: memory }\n"
            + "pipelines:\n"
            + "  - id: bench\n"
            + "    source:\n"
            + "      rabbitmq: { uri: \""
            + uri
            + "\", queue: "
            + queue
            + ", prefetch: "
            + prefetch
            + ", consumers: "
            + consumers
            + ", requeue_delay: 10ms }\n"
            + "    dedup: { window: 1h }\n"
            + "    deliver: { stdout: {} }\n";
    PipelineSettings p = ConfigLoader.parse("bench.yaml", yaml, n -> null).pipelines().get(0);
    DedupStore s =
        store.equals("redis")
            ? RedisDedupStore.builder(redis)
                .prefix("idem-bench-" + UUID.randomUUID().toString().substring(0, 8) + ":")
                .build()
            : MemoryDedupStore.builder().build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    IdemMetrics metrics = new IdemMetrics(registry);
    Pipeline pipeline =
        Pipeline.builder(p)
            .keys(ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system()))
            .dedup(
                Deduplicator.builder(s, Scope.of(p.id())).config(p.dedup().config()).build(), null)
            .deliverer(d -> new DeliveryOutcome.Delivered(0, null, null))
            .meters(metrics.pipeline(p.id()))
            .batchCommits(store.equals("redis")) // as ServiceAssembly sets it for a shared store
            .build();
    EventSource source =
        Sources.open(
            p.source(),
            pipeline,
            new Sources.Context(metrics.pipeline(p.id()), TimeSource.system()));
    Counter accepted = counter(registry, "accepted");
    Counter duplicate = counter(registry, "duplicate");
    try {
      long start = System.nanoTime();
      source.start();
      long deadline = start + TimeUnit.MINUTES.toNanos(10);
      while (accepted.count() + duplicate.count() < messages) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("Idem's source did not finish");
        }
        Thread.onSpinWait();
        Thread.sleep(0, 200_000);
      }
      long took = System.nanoTime() - start;
      double retried = counter(registry, "retried").count();
      if (retried > 0) {
        System.out.printf(
            Locale.ROOT,
            "# %s: %.0f messages put back (in flight on another consumer, or store errors)%n",
            store,
            retried);
      }
      return took;
    } finally {
      source.close();
      s.close();
    }
  }

  private static Counter counter(SimpleMeterRegistry registry, String outcome) {
    return registry
        .get("idem_source_outcomes")
        .tag("source", "rabbitmq")
        .tag("outcome", outcome)
        .counter();
  }
}
