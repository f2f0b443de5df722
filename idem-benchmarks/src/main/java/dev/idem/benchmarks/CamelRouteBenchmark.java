package dev.idem.benchmarks;

import dev.idem.Scope;
import dev.idem.camel.IdemIdempotentRepository;
import dev.idem.store.memory.MemoryDedupStore;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One Camel route, two repositories, in one JMH run (issue 13): {@code
 * from("direct:x").idempotentConsumer(header("id"), repo).process(count)} with {@link
 * IdemIdempotentRepository} over the memory store, and with Camel's own {@code
 * MemoryIdempotentRepository}, both bounded to {@code maxKeys}. The target is a ratio Idem / Camel
 * of at least 1.0 for unique keys: Idem's semantics (atomic reserve, release on failure, in flight
 * told apart from done) at no cost over the whole route.
 *
 * <ul>
 *   <li>{@code idemUnique} / {@code camelUnique}: a new message id per exchange (the route body
 *       runs; add then confirm).
 *   <li>{@code idemDuplicate} / {@code camelDuplicate}: an id already confirmed (the route drops
 *       it).
 * </ul>
 *
 * Each thread cycles through 65,536 precomputed ids, more than the bound, so a "unique" id was
 * evicted long before it comes round again. Run: {@code java -jar
 * idem-benchmarks/target/benchmarks.jar CamelRouteBenchmark -t 1} (and {@code -t 2}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class CamelRouteBenchmark {
  static final int UNIQUE = 1 << 16;
  static final int DUPLICATES = 512;

  /** The bound of both repositories (Idem's maxKeysPerScope, Camel's cache size). */
  @Param({"10000"})
  public int maxKeys;

  MemoryDedupStore store;
  CamelContext camel;
  ProducerTemplate producer;
  Endpoint idem;
  Endpoint camelRepo;
  final AtomicInteger ran = new AtomicInteger();
  final AtomicInteger threads = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    store = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).build();
    IdemIdempotentRepository idemRepository =
        IdemIdempotentRepository.of(store, Scope.of("bench-camel"));
    MemoryIdempotentRepository camelRepository =
        (MemoryIdempotentRepository) MemoryIdempotentRepository.memoryIdempotentRepository(maxKeys);
    camel = new DefaultCamelContext();
    camel.addRoutes(
        new RouteBuilder() {
          @Override
          public void configure() {
            from("direct:idem")
                .idempotentConsumer(header("id"), idemRepository)
                .process(e -> ran.incrementAndGet());
            from("direct:camel")
                .idempotentConsumer(header("id"), camelRepository)
                .process(e -> ran.incrementAndGet());
          }
        });
    camel.start();
    producer = camel.createProducerTemplate();
    idem = camel.getEndpoint("direct:idem");
    camelRepo = camel.getEndpoint("direct:camel");
    for (String id : DUPLICATE_IDS) {
      send(idem, id);
      send(camelRepo, id);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    camel.stop();
    store.close();
  }

  Exchange send(Endpoint endpoint, String id) {
    return producer.send(endpoint, e -> e.getMessage().setHeader("id", id));
  }

  /** Per-thread ids. */
  @State(org.openjdk.jmh.annotations.Scope.Thread)
  public static class Ids {
    String[] unique;
    int nextUnique;
    int nextDuplicate;

    @Setup(Level.Trial)
    public void setUp(CamelRouteBenchmark b) {
      int thread = b.threads.getAndIncrement();
      unique = new String[UNIQUE];
      for (int i = 0; i < UNIQUE; i++) {
        unique[i] = new UUID(thread, i).toString();
      }
    }

    String unique() {
      String id = unique[nextUnique];
      nextUnique = (nextUnique + 1) & (UNIQUE - 1);
      return id;
    }

    String duplicate() {
      String id = DUPLICATE_IDS[nextDuplicate];
      nextDuplicate = (nextDuplicate + 1) & (DUPLICATES - 1);
      return id;
    }
  }

  static final String[] DUPLICATE_IDS = new String[DUPLICATES];

  static {
    for (int i = 0; i < DUPLICATES; i++) {
      DUPLICATE_IDS[i] = new UUID(-1, i).toString();
    }
  }

  @Benchmark
  public Exchange idemUnique(Ids ids) {
    return send(idem, ids.unique());
  }

  @Benchmark
  public Exchange camelUnique(Ids ids) {
    return send(camelRepo, ids.unique());
  }

  @Benchmark
  public Exchange idemDuplicate(Ids ids) {
    return send(idem, ids.duplicate());
  }

  @Benchmark
  public Exchange camelDuplicate(Ids ids) {
    return send(camelRepo, ids.duplicate());
  }
}
