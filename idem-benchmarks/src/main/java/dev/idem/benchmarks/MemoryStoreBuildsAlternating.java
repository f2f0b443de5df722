package dev.idem.benchmarks;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.internal.Sha256Words;
import dev.idem.store.memory.MemoryDedupStore;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.UUID;
import java.util.function.LongUnaryOperator;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;

/**
 * Two builds of Idem in one JVM: the facade's reserve + commit of unique keys at 10,000 keys (what
 * {@link MemoryStoreAlternating}'s {@code idem-facade} contender does, on one thread) with the
 * classes of an older benchmarks jar and of a newer one, each in its own class loader, next to
 * Camel's add + confirm, in alternating slots (Camel, old, new, Camel, ...) of the calling thread's
 * CPU time. On a loaded machine this is the before/after figure to trust: both builds see the same
 * minutes, the same JIT threads and the same collector, and CPU time per operation hardly depends
 * on how many other threads share the cores. Prints the medians over rounds of CPU ns and bytes
 * allocated per operation, and of the per-round ratios.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.MemoryStoreBuildsAlternating \
 *     OLD_BENCHMARKS_JAR NEW_BENCHMARKS_JAR [ROUNDS [OPS_PER_SLOT]]
 * e.g. ... MemoryStoreBuildsAlternating /tmp/main.jar idem-benchmarks/target/benchmarks.jar 30 1000000
 * </pre>
 */
public final class MemoryStoreBuildsAlternating {
  private static final int WARMUP_ROUNDS = 5;

  private MemoryStoreBuildsAlternating() {}

  /**
   * Runs the rounds and prints the figures.
   *
   * @param args the old and the new benchmarks jar, then optionally rounds and operations per slot
   * @throws Exception if a jar cannot be loaded
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println(
          "usage: MemoryStoreBuildsAlternating OLD_JAR NEW_JAR [ROUNDS [OPS_PER_SLOT]]");
      System.exit(2);
    }
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 30;
    long ops = args.length > 3 ? Long.parseLong(args[3]) : 1_000_000;
    LongUnaryOperator[] sides = {new CamelWorker(), load(args[0]), load(args[1])};
    String[] names = {"camel", "old", "new"};
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    double[][] nanos = new double[3][rounds];
    double[][] bytes = new double[3][rounds];
    for (int round = -WARMUP_ROUNDS; round < rounds; round++) {
      for (int s = 0; s < sides.length; s++) {
        long cpu = threads.getCurrentThreadCpuTime();
        long allocated = threads.getCurrentThreadAllocatedBytes();
        sides[s].applyAsLong(ops);
        if (round >= 0) {
          nanos[s][round] = (threads.getCurrentThreadCpuTime() - cpu) / (double) ops;
          bytes[s][round] = (threads.getCurrentThreadAllocatedBytes() - allocated) / (double) ops;
        }
      }
    }
    System.out.printf(
        "MemoryStoreBuildsAlternating rounds=%d ops=%d, %s, loadavg %s%n",
        rounds, ops, Runtime.version(), Files.readString(Path.of("/proc/loadavg")).trim());
    for (int s = 0; s < sides.length; s++) {
      System.out.printf(
          "median CPU ns/op %-5s %7.1f  bytes/op %6.1f%n",
          names[s], BuildsInOneJvm.median(nanos[s]), BuildsInOneJvm.median(bytes[s]));
    }
    System.out.printf(
        "median ratio camel/old %.3f  camel/new %.3f  old/new (speed-up) %.3f%n",
        BuildsInOneJvm.medianRatio(nanos[0], nanos[1]),
        BuildsInOneJvm.medianRatio(nanos[0], nanos[2]),
        BuildsInOneJvm.medianRatio(nanos[1], nanos[2]));
  }

  /** Loads {@link FacadeWorker} against the Idem classes of {@code jar}, in a loader of its own. */
  private static LongUnaryOperator load(String jar) throws Exception {
    return (LongUnaryOperator) BuildsInOneJvm.load(FacadeWorker.class, jar);
  }

  /**
   * One build's facade on a 10,000-key memory store, cycling through 65,536 precomputed keys (those
   * of {@link MemoryStoreBenchmark}); {@code applyAsLong(n)} runs n reserve + commit. Uses only
   * Idem's API, so the same class file links against either build.
   */
  public static final class FacadeWorker implements LongUnaryOperator {
    private static final int KEYS = 1 << 16;
    private final DedupKey[] keys = new DedupKey[KEYS];
    private final Deduplicator dedup;
    private int next;

    /** Builds the store and the keys. */
    public FacadeWorker() {
      MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(10_000).build();
      dedup = Deduplicator.builder(store, Scope.of("builds")).build();
      MessageDigest sha = Sha256Words.newDigest();
      for (int i = 0; i < KEYS; i++) {
        byte[] name = new UUID(0, i).toString().getBytes(StandardCharsets.UTF_8);
        keys[i] = DedupKey.ofDigest(sha.digest(name));
      }
    }

    @Override
    public long applyAsLong(long ops) {
      long acquired = 0;
      int i = next;
      for (long n = 0; n < ops; n++) {
        if (dedup.reserve(keys[i]) instanceof Decision.Acquired a) {
          a.reservation().commit();
          acquired++;
        }
        i = (i + 1) & (KEYS - 1);
      }
      next = i;
      return acquired;
    }
  }

  /** Camel's add + confirm of the strings the facade's keys digest, bounded to 10,000. */
  private static final class CamelWorker implements LongUnaryOperator {
    private static final int KEYS = 1 << 16;
    private final String[] keys = new String[KEYS];
    private final IdempotentRepository camel =
        MemoryIdempotentRepository.memoryIdempotentRepository(10_000);
    private int next;

    CamelWorker() {
      for (int i = 0; i < KEYS; i++) {
        keys[i] = new UUID(0, i).toString();
      }
    }

    @Override
    public long applyAsLong(long ops) {
      long added = 0;
      int i = next;
      for (long n = 0; n < ops; n++) {
        String key = keys[i];
        if (camel.add(key)) {
          camel.confirm(key);
          added++;
        }
        i = (i + 1) & (KEYS - 1);
      }
      next = i;
      return added;
    }
  }
}
