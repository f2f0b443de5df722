package dev.idem.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.spring.boot.IdemDeduplicators;
import dev.idem.spring.boot.Idempotent;
import dev.idem.spring.boot.IdempotentInterceptor;
import dev.idem.spring.boot.JacksonResultSerializer;
import dev.idem.store.memory.MemoryDedupStore;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;

/**
 * The cost of {@code @Idempotent} per call (issue 13): the same method called bare and through the
 * starter's advice (a Spring class proxy, the SpEL key {@code #id}, reserve and commit on the
 * memory store), in one run. The overhead per call is {@code idempotentUnique - bare} (ns/op).
 *
 * <ul>
 *   <li>{@code bare}: the method itself.
 *   <li>{@code idempotentUnique}: a new key per call (the method runs; reserve, run, commit).
 *   <li>{@code idempotentDuplicate}: a committed key (the method does not run; the duplicate gets
 *       null).
 * </ul>
 *
 * Run: {@code java -jar idem-benchmarks/target/benchmarks.jar IdempotentAnnotationBenchmark -t 1}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class IdempotentAnnotationBenchmark {
  static final int UNIQUE = 1 << 16;
  static final int DUPLICATES = 512;

  /** The bean: what the method does is trivial, so the advice's cost shows. */
  public static class Orders {
    /** Creates the bean. */
    public Orders() {}

    /**
     * Places an order.
     *
     * @param id the order id
     * @return a receipt
     */
    @Idempotent(key = "#id", scope = "bench-spring")
    public String place(String id) {
      return id;
    }
  }

  MemoryDedupStore store;
  Orders bare;
  Orders advised;
  final AtomicInteger threads = new AtomicInteger();
  final String[] duplicates = new String[DUPLICATES];

  @Setup(Level.Trial)
  public void setUp() {
    store = MemoryDedupStore.builder().maxKeysPerScope(10_000).build();
    IdemDeduplicators deduplicators = new IdemDeduplicators(store, Map.of(), List.of());
    IdempotentInterceptor interceptor =
        new IdempotentInterceptor(deduplicators, new JacksonResultSerializer(new ObjectMapper()));
    ProxyFactory proxies = new ProxyFactory(new Orders());
    proxies.setProxyTargetClass(true);
    proxies.addAdvisor(
        new DefaultPointcutAdvisor(
            new AnnotationMatchingPointcut(null, Idempotent.class, true), interceptor));
    advised = (Orders) proxies.getProxy();
    bare = new Orders();
    for (int i = 0; i < DUPLICATES; i++) {
      duplicates[i] = new UUID(-1, i).toString();
      advised.place(duplicates[i]);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    store.close();
  }

  /** Per-thread ids. */
  @State(org.openjdk.jmh.annotations.Scope.Thread)
  public static class Ids {
    String[] unique;
    int nextUnique;
    int nextDuplicate;

    @Setup(Level.Trial)
    public void setUp(IdempotentAnnotationBenchmark b) {
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
  }

  @Benchmark
  public String bare(Ids ids) {
    return bare.place(ids.unique());
  }

  @Benchmark
  public String idempotentUnique(Ids ids) {
    return advised.place(ids.unique());
  }

  @Benchmark
  public String idempotentDuplicate(Ids ids) {
    String id = duplicates[ids.nextDuplicate];
    ids.nextDuplicate = (ids.nextDuplicate + 1) & (DUPLICATES - 1);
    return advised.place(id);
  }
}
