package dev.idem.benchmarks;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.internal.Sha256Words;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import dev.idem.store.memory.MemoryDedupStore;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;

/**
 * The memory store's reserve + commit of unique keys next to Camel's add + confirm, measured in
 * alternating slots (Idem, Camel, Idem, Camel, ...) in one JVM: a companion to {@link
 * MemoryStoreBenchmark}, whose JMH run measures one method after the other, so that on a shared
 * machine whose speed swings by several times within seconds each side sees the same weather. The
 * figure is the median over rounds of each round's ratio (Idem's slot over the Camel slot next to
 * it), printed with the lowest and highest round ratio. Each slot also sums its workers' thread CPU
 * time, and the same ratios are printed over CPU time per operation (Camel's nanoseconds per
 * operation over Idem's): on a machine shared with other work, where wall-clock rates swing with
 * whatever else runs, CPU time per operation stays close to what a quiet machine shows for
 * compute-bound, cache-resident work like this.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.MemoryStoreAlternating \
 *     THREADS MAX_KEYS [ROUNDS [SLOT_MILLIS]]
 * e.g. ... MemoryStoreAlternating 2 10000 40 500
 * </pre>
 *
 * <p>Work per operation is the same as in {@link MemoryStoreBenchmark}: keys precomputed per thread
 * in a cache-resident ring (SHA-256 digests for Idem, the strings they digest for Camel), both
 * bounded to {@code MAX_KEYS} and evicting on every insert once full. Idem is measured four ways:
 * the {@link Deduplicator} facade on the system clock, the facade on {@link TimeSource#coarse()},
 * the store SPI alone, and ({@code idem-own-store}) the facade with a store of its own per thread.
 * The last one shares nothing between the threads, so its ratio to {@code idem-facade} is what the
 * threads pay for sharing one scope's stripes (monitors and cache lines); with one thread the two
 * are the same work. The first two rounds warm up and are not counted.
 *
 * <p>With more than one thread, each round is bracketed by a short {@link CacheLineTransfer} probe
 * of what moving a cache line between the cores costs at the time, and the CPU-time ratios are also
 * printed for the rounds where it was cheap ("near", both probes below 80 ns), dear ("far") or
 * changed during the round ("mixed"): on a VM that cost can jump several times when the hypervisor
 * moves a vCPU, and the shared store's figure moves with it.
 */
public final class MemoryStoreAlternating {
  private static final int UNIQUE = MemoryStoreBenchmark.UNIQUE;

  /**
   * Rounds not counted; {@code -Didem.warmupRounds=N} raises it on a loaded machine, where the
   * JIT's compiler threads may not have finished the hot paths within two rounds.
   */
  private static final int WARMUP_ROUNDS = Integer.getInteger("idem.warmupRounds", 2);

  /**
   * Hand-offs of {@link CacheLineTransfer#handoffNanos} before and after each round (with more than
   * one thread): a few milliseconds.
   */
  private static final int PROBE_HANDOFFS = 200_000;

  /**
   * A round whose probes both measured a hand-off below this many nanoseconds ran with cheap
   * cross-core cache-line moves (about 30 ns on the EPYC VM of 2026-12-04), one whose probes both
   * measured it at or above with dear ones (170 ns and more there: the hypervisor had moved a vCPU
   * away); others are mixed.
   */
  private static final double NEAR_NANOS = 80;

  /** How dear cross-core cache-line moves were during a round (see {@link #NEAR_NANOS}). */
  private enum Lines {
    NEAR("near  rounds (line hand-off below 80 ns)"),
    FAR("far   rounds (line hand-off 80 ns or more)"),
    MIXED("mixed rounds (line hand-off crossed 80 ns)");

    final String label;

    Lines(String label) {
      this.label = label;
    }

    static Lines of(double before, double after) {
      boolean near = before < NEAR_NANOS;
      return near != (after < NEAR_NANOS) ? MIXED : near ? NEAR : FAR;
    }
  }

  private final MemoryDedupStore store;
  private final Deduplicator facade;
  private final Deduplicator coarse;
  private final MemoryDedupStore[] ownStores;
  private final Deduplicator[] own;
  private final IdempotentRepository camel;
  private final Ttl ttl;
  private final long lease;
  private final DedupKey[][] keys;
  private final String[][] strings;
  private final int[] next;
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  /** Thread CPU nanoseconds per operation of the last {@link #slot}. */
  private double lastCpuNanosPerOp;

  /** Bytes allocated per operation by the workers of the last {@link #slot}. */
  private double lastBytesPerOp;

  private MemoryStoreAlternating(int threads, int maxKeys) {
    store = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).build();
    facade = Deduplicator.builder(store, Scope.of("alt-facade")).build();
    coarse =
        Deduplicator.builder(store, Scope.of("alt-coarse")).timeSource(TimeSource.coarse()).build();
    ownStores = new MemoryDedupStore[threads];
    own = new Deduplicator[threads];
    for (int t = 0; t < threads; t++) {
      ownStores[t] = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).build();
      own[t] = Deduplicator.builder(ownStores[t], Scope.of("alt-facade")).build();
    }
    camel = MemoryIdempotentRepository.memoryIdempotentRepository(maxKeys);
    ttl = dev.idem.DedupConfig.ofDefaults().storeTtl();
    lease = dev.idem.DedupConfig.ofDefaults().lease().toMillis();
    keys = new DedupKey[threads][UNIQUE];
    strings = new String[threads][UNIQUE];
    next = new int[threads];
    MessageDigest sha = Sha256Words.newDigest();
    for (int t = 0; t < threads; t++) {
      for (int i = 0; i < UNIQUE; i++) {
        strings[t][i] = MemoryStoreBenchmark.name(t, i);
        keys[t][i] = MemoryStoreBenchmark.digest(sha, strings[t][i]);
      }
    }
  }

  /** One way of doing the work; {@code op} runs one reserve + commit of key {@code i}. */
  private interface Contender {
    void op(int thread, int i, long token);
  }

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    int maxKeys = Integer.parseInt(args[1]);
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 40;
    long slotMillis = args.length > 3 ? Long.parseLong(args[3]) : 500;
    new MemoryStoreAlternating(threads, maxKeys).run(threads, maxKeys, rounds, slotMillis);
  }

  private void run(int threads, int maxKeys, int rounds, long slotMillis) throws Exception {
    Scope spiScope = Scope.of("alt-spi");
    Map<String, Contender> contenders = new LinkedHashMap<>();
    contenders.put(
        "camel",
        (t, i, token) -> {
          String key = strings[t][i];
          if (camel.add(key)) {
            camel.confirm(key);
          }
        });
    contenders.put("idem-facade", (t, i, token) -> settle(facade.reserve(keys[t][i])));
    contenders.put("idem-coarse", (t, i, token) -> settle(coarse.reserve(keys[t][i])));
    contenders.put("idem-own-store", (t, i, token) -> settle(own[t].reserve(keys[t][i])));
    contenders.put(
        "idem-spi",
        (t, i, token) -> {
          DedupKey key = keys[t][i];
          long now = System.currentTimeMillis();
          ReserveResult r =
              store.reserve(new ReserveRequest(spiScope, key, null, token, now, lease, ttl));
          if (r instanceof ReserveResult.Acquired) {
            store.commit(new CommitRequest(spiScope, key, token, now, ttl, null));
          }
        });
    System.out.printf(
        "MemoryStoreAlternating threads=%d maxKeys=%d rounds=%d (+%d warm-up) slot=%d ms, %s%n",
        threads, maxKeys, rounds, WARMUP_ROUNDS, slotMillis, Runtime.version());
    Map<String, List<Double>> ratios = new LinkedHashMap<>();
    Map<String, List<Double>> cpuRatios = new LinkedHashMap<>();
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    Map<String, List<Double>> cpuNanos = new LinkedHashMap<>();
    Map<String, List<Double>> bytes = new LinkedHashMap<>();
    contenders.keySet().forEach(name -> rates.put(name, new ArrayList<>()));
    contenders.keySet().forEach(name -> cpuNanos.put(name, new ArrayList<>()));
    contenders.keySet().forEach(name -> bytes.put(name, new ArrayList<>()));
    List<Double> sharing = new ArrayList<>();
    // contender -> how dear line moves were -> that contender's CPU-time ratios to Camel
    Map<String, Map<Lines, List<Double>>> byLines = new LinkedHashMap<>();
    for (int round = 1; round <= WARMUP_ROUNDS + rounds; round++) {
      double camelRate = 0;
      double camelCpu = 0;
      double facadeRate = 0;
      StringBuilder line = new StringBuilder();
      double before = threads > 1 ? CacheLineTransfer.handoffNanos(PROBE_HANDOFFS) : 0;
      Map<String, Double> roundCpuRatios = new LinkedHashMap<>();
      for (Map.Entry<String, Contender> c : contenders.entrySet()) {
        double rate = slot(c.getValue(), threads, slotMillis);
        double cpu = lastCpuNanosPerOp;
        line.append(String.format("  %s %,.0f (%.0f ns)", c.getKey(), rate, cpu));
        if (round <= WARMUP_ROUNDS) {
          continue;
        }
        rates.get(c.getKey()).add(rate);
        cpuNanos.get(c.getKey()).add(cpu);
        bytes.get(c.getKey()).add(lastBytesPerOp);
        if (c.getKey().equals("idem-facade")) {
          facadeRate = rate;
        } else if (c.getKey().equals("idem-own-store")) {
          sharing.add(facadeRate / rate);
        }
        if (c.getKey().equals("camel")) {
          camelRate = rate;
          camelCpu = cpu;
        } else {
          ratios.computeIfAbsent(c.getKey(), k -> new ArrayList<>()).add(rate / camelRate);
          cpuRatios.computeIfAbsent(c.getKey(), k -> new ArrayList<>()).add(camelCpu / cpu);
          roundCpuRatios.put(c.getKey(), camelCpu / cpu);
        }
      }
      String lines = "";
      if (threads > 1) {
        double after = CacheLineTransfer.handoffNanos(PROBE_HANDOFFS);
        lines = String.format("  line hand-off %.0f/%.0f ns", before, after);
        if (round > WARMUP_ROUNDS) {
          Lines regime = Lines.of(before, after);
          roundCpuRatios.forEach(
              (name, ratio) ->
                  byLines
                      .computeIfAbsent(name, k -> new LinkedHashMap<>())
                      .computeIfAbsent(regime, k -> new ArrayList<>())
                      .add(ratio));
        }
      }
      System.out.printf(
          "round %2d%s%s%s  loadavg %s%n",
          round,
          round <= WARMUP_ROUNDS ? " (warm-up)" : "",
          line,
          lines,
          Files.readString(Path.of("/proc/loadavg")).trim());
    }
    for (Map.Entry<String, List<Double>> r : rates.entrySet()) {
      System.out.printf("median ops/s  %-12s %,12.0f%n", r.getKey(), median(r.getValue()));
    }
    for (Map.Entry<String, List<Double>> r : cpuNanos.entrySet()) {
      System.out.printf("median CPU ns/op  %-12s %8.1f%n", r.getKey(), median(r.getValue()));
    }
    for (Map.Entry<String, List<Double>> r : bytes.entrySet()) {
      System.out.printf(
          "median bytes allocated/op  %-12s %6.1f%n", r.getKey(), median(r.getValue()));
    }
    printRatios("ratio", ratios);
    printRatios("CPU-time ratio", cpuRatios);
    System.out.printf(
        "ratio idem-facade / idem-own-store (one shared store / a store per thread): median %.2f%n",
        median(sharing));
    // With two or more threads the shared store's cost is a few cache lines per event moved between
    // cores, so its ratio follows what a move costs at the time (see CacheLineTransfer).
    byLines.forEach(
        (name, regimes) ->
            regimes.forEach(
                (regime, values) ->
                    System.out.printf(
                        "CPU-time ratio %-12s / camel in %s: median %.2f over %d rounds%n",
                        name, regime.label, median(values), values.size())));
    store.close();
    for (MemoryDedupStore s : ownStores) {
      s.close();
    }
  }

  private static void printRatios(String what, Map<String, List<Double>> ratios) {
    for (Map.Entry<String, List<Double>> r : ratios.entrySet()) {
      double[] sorted = r.getValue().stream().mapToDouble(Double::doubleValue).sorted().toArray();
      System.out.printf(
          "%s %-12s / camel: median %.2f (lowest %.2f, highest %.2f over %d rounds)%n",
          what,
          r.getKey(),
          median(r.getValue()),
          sorted[0],
          sorted[sorted.length - 1],
          sorted.length);
    }
  }

  private static void settle(Decision d) {
    if (d instanceof Decision.Acquired a) {
      a.reservation().commit();
    }
  }

  private double slot(Contender c, int threads, long millis) throws InterruptedException {
    AtomicBoolean stop = new AtomicBoolean();
    long[] done = new long[threads * 16];
    long[] cpu = new long[threads * 16];
    long[] allocated = new long[threads * 16];
    Thread[] workers = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      int thread = t;
      workers[t] =
          new Thread(
              () -> {
                long cpuStart = THREADS.getCurrentThreadCpuTime();
                long bytesStart = allocatedBytes();
                int i = next[thread];
                long token = ((long) thread + 1) << 40 | (long) i << 8;
                long n = 0;
                while (!stop.get()) {
                  c.op(thread, i, ++token);
                  i = (i + 1) & (UNIQUE - 1);
                  n++;
                }
                next[thread] = i;
                done[thread * 16] = n;
                cpu[thread * 16] = THREADS.getCurrentThreadCpuTime() - cpuStart;
                allocated[thread * 16] = allocatedBytes() - bytesStart;
              });
    }
    long start = System.nanoTime();
    for (Thread w : workers) {
      w.start();
    }
    Thread.sleep(millis);
    stop.set(true);
    long total = 0;
    long cpuTotal = 0;
    long bytesTotal = 0;
    for (int t = 0; t < threads; t++) {
      workers[t].join();
      total += done[t * 16];
      cpuTotal += cpu[t * 16];
      bytesTotal += allocated[t * 16];
    }
    lastCpuNanosPerOp = (double) cpuTotal / Math.max(1, total);
    lastBytesPerOp = (double) bytesTotal / Math.max(1, total);
    return total / ((System.nanoTime() - start) / 1e9);
  }

  /** Bytes the calling thread allocated so far, or 0 where the JVM does not count them. */
  private static long allocatedBytes() {
    return THREADS instanceof com.sun.management.ThreadMXBean counting
        ? counting.getCurrentThreadAllocatedBytes()
        : 0;
  }

  private static double median(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
