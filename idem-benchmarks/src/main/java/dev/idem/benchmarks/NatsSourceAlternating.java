package dev.idem.benchmarks;

import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.NatsSourceSettings;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.SourceMeters;
import dev.idem.server.source.nats.NatsSource;
import dev.idem.spi.DedupStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * Issue 10's NATS benchmark: Idem's JetStream source with dedup (memory store, and Redis when a URL
 * is given) against a bare pull consumer on the same client (jnats), server, batch size and ack
 * mode (explicit, one ack per message) that does no dedup, alternating in one run. Each round and
 * each contender gets a fresh memory stream with the same {@code MESSAGES} messages (unique {@code
 * Nats-Msg-Id}, 100-byte JSON bodies) and consumes all of them (Redis keys expire after 2 minutes);
 * the figure is messages per second from the consumer's start to the last ack. Idem delivers to a
 * sink that does nothing.
 *
 * <p>Run: {@code java -cp idem-server/target/idem.jar:idem-benchmarks/target/classes
 * dev.idem.benchmarks.NatsSourceAlternating NATS_URL MESSAGES ROUNDS BATCH [REDIS_URL]}, e.g.
 * {@code nats://127.0.0.1:4222 50000 5 100 redis://127.0.0.1:6379}. It creates and deletes streams
 * named {@code IDEM_BENCH_*} only.
 */
public final class NatsSourceAlternating {
  private NatsSourceAlternating() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 ? args[0] : "nats://127.0.0.1:4222";
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 50_000;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    int batch = args.length > 3 ? Integer.parseInt(args[3]) : 100;
    String redis = args.length > 4 ? args[4] : null;
    List<String> contenders = new ArrayList<>(List.of("bare", "memory"));
    if (redis != null) {
      contenders.add("redis");
    }
    System.out.printf(
        "nats source: %d messages, batch %d, %d rounds, contenders %s%n",
        messages, batch, rounds, contenders);
    try (Connection nc = Nats.connect(url)) {
      for (int round = 1; round <= rounds; round++) {
        StringBuilder line = new StringBuilder("round " + round + ":");
        double bare = 0;
        // Alternate the order each round, so neither side always runs on a warmer JVM.
        List<String> order = new ArrayList<>(contenders);
        if (round % 2 == 0) {
          java.util.Collections.reverse(order);
        }
        java.util.Map<String, Double> rates = new java.util.HashMap<>();
        for (String c : order) {
          String stream =
              "IDEM_BENCH_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase(Locale.ROOT);
          String subject = "idembench." + stream.toLowerCase(Locale.ROOT);
          JetStreamManagement jsm = nc.jetStreamManagement();
          jsm.addStream(
              StreamConfiguration.builder()
                  .name(stream)
                  .subjects(subject)
                  .storageType(StorageType.Memory)
                  .build());
          try {
            fill(nc.jetStream(), subject, messages);
            double rate =
                c.equals("bare")
                    ? bare(nc, jsm, stream, batch, messages)
                    : idem(url, stream, batch, messages, c.equals("redis") ? redis : null);
            rates.put(c, rate);
          } finally {
            jsm.deleteStream(stream);
          }
        }
        bare = rates.get("bare");
        for (String c : contenders) {
          double r = rates.get(c);
          line.append(String.format(" %s %.0f msg/s", c, r));
          if (!c.equals("bare")) {
            line.append(String.format(" (%.2f of bare)", r / bare));
          }
        }
        System.out.println(line);
      }
    }
  }

  private static void fill(JetStream js, String subject, int messages) {
    String pad = "x".repeat(60);
    List<CompletableFuture<PublishAck>> acks = new ArrayList<>(messages);
    for (int i = 0; i < messages; i++) {
      acks.add(
          js.publishAsync(
              subject,
              new Headers().put("Nats-Msg-Id", "m-" + i),
              ("{\"id\":" + i + ",\"pad\":\"" + pad + "\"}").getBytes(StandardCharsets.UTF_8)));
      if (acks.size() >= 5_000) {
        CompletableFuture.allOf(acks.toArray(new CompletableFuture<?>[0])).join();
        acks.clear();
      }
    }
    CompletableFuture.allOf(acks.toArray(new CompletableFuture<?>[0])).join();
  }

  /** The bare consumer: same consumer settings as Idem creates, fetch, ack each. */
  private static double bare(
      Connection nc, JetStreamManagement jsm, String stream, int batch, int messages)
      throws Exception {
    jsm.addOrUpdateConsumer(
        stream,
        ConsumerConfiguration.builder()
            .durable("bare")
            .ackPolicy(AckPolicy.Explicit)
            .ackWait(Duration.ofSeconds(30))
            .maxAckPending(Math.max(1_000L, 4L * batch))
            .build());
    JetStreamSubscription sub =
        nc.jetStream().subscribe(null, PullSubscribeOptions.bind(stream, "bare"));
    long start = System.nanoTime();
    int n = 0;
    while (n < messages) {
      for (Message m : sub.fetch(batch, Duration.ofMillis(500))) {
        m.ack();
        n++;
      }
    }
    nc.flush(Duration.ofSeconds(5));
    double rate = messages / ((System.nanoTime() - start) / 1e9);
    sub.unsubscribe();
    return rate;
  }

  private static double idem(String url, String stream, int batch, int messages, String redis)
      throws Exception {
    String store =
        redis == null
            ? "{ type: memory, max_keys: " + (messages * 2) + " }"
            : "{ type: redis, url: \"" + redis + "\", prefix: \"idem:bench:" + stream + ":\" }";
    IdemConfig config =
        ConfigLoader.parse(
            "bench.yaml",
            "store: "
                + store
                + "\npipelines:\n  - id: bench\n    source:\n      nats: { url: \""
                + url
                + "\", stream: "
                + stream
                + ", durable: idem, batch: "
                + batch
                + " }\n    dedup: { window: 2m }\n    deliver: { stdout: {} }\n",
            name -> null);
    PipelineSettings p = config.pipelines().get(0);
    DedupStore dedupStore = ServiceAssembly.openStore(config.store());
    try {
      Pipeline pipeline =
          Pipeline.builder(p)
              .keys(ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system()))
              .dedup(
                  Deduplicator.builder(dedupStore, Scope.of(p.id()))
                      .config(p.dedup().config())
                      .build(),
                  null)
              .deliverer(d -> new DeliveryOutcome.Delivered(0, null, null))
              .batchCommits(redis != null) // as ServiceAssembly sets it for a shared store
              .build();
      SourceMeters meters = new SourceMeters(new SimpleMeterRegistry(), p.id(), "nats");
      NatsSource source = new NatsSource((NatsSourceSettings) p.source(), pipeline, meters);
      long start = System.nanoTime();
      source.start();
      try {
        while (meters.total(SourceMeters.Kind.ACCEPTED) + meters.total(SourceMeters.Kind.DUPLICATE)
            < messages) {
          Thread.sleep(1);
        }
        return messages / ((System.nanoTime() - start) / 1e9);
      } finally {
        source.close();
      }
    } finally {
      dedupStore.close();
    }
  }
}
