package dev.idem.benchmarks;

import dev.idem.key.InboundEvent;
import dev.idem.key.KeyRule;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.function.Consumer;
import java.util.function.LongUnaryOperator;

/**
 * Builds of the default key in one JVM, next to raw SHA-256 of the same body: the key of {@link
 * KeyDerivationCpuTime} with the Idem classes of each build (e.g. an older one and a newer one),
 * each in its own class loader, in alternating slots (SHA-256, build 1, build 2, SHA-256, ...) of
 * the calling thread's CPU time. On a loaded machine the ratio between builds is the before/after
 * figure to trust: both builds see the same minutes, the same JIT threads and the same collector
 * (two slots of one build agreed within about 4% at load 5-10). The key / SHA-256 ratio itself
 * still moves between runs with the machine's state. Prints the medians over rounds of CPU ns per
 * operation and of the per-round ratios: SHA-256 time / key time (key throughput / SHA-256
 * throughput; the target is at least 0.25) and a build's time / build 1's.
 *
 * <p>A build is a jar or a classes directory that holds {@code dev.idem.key} (a benchmarks jar, an
 * idem-core jar, or {@code idem-core/target/classes/}).
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KeyDerivationBuildsAlternating \
 *     SHAPE ROUNDS OPS_PER_SLOT BUILD_1 BUILD_2 [BUILD_3 ...]
 * e.g. ... KeyDerivationBuildsAlternating numbers 30 20000 /tmp/main.jar idem-core/target/classes/
 * </pre>
 */
public final class KeyDerivationBuildsAlternating {
  private static final int WARMUP_ROUNDS = 5;

  private KeyDerivationBuildsAlternating() {}

  /**
   * Runs the rounds and prints the figures.
   *
   * @param args the shape ({@code order} or {@code numbers}), rounds, operations per slot, then two
   *     or more builds
   * @throws Exception if a build cannot be loaded
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println(
          "usage: KeyDerivationBuildsAlternating SHAPE ROUNDS OPS_PER_SLOT BUILD_1 BUILD_2"
              + " [BUILD_3 ...]  (SHAPE: order or numbers; a build: a jar or a classes directory)");
      System.exit(2);
    }
    String shape = args[0];
    int rounds = Integer.parseInt(args[1]);
    int ops = Integer.parseInt(args[2]);
    byte[] body =
        (shape.equals("numbers")
                ? KeyDerivationBenchmark.numbersBody()
                : KeyDerivationBenchmark.BODY)
            .getBytes(StandardCharsets.UTF_8);
    int builds = args.length - 3;
    LongUnaryOperator[] sides = new LongUnaryOperator[1 + builds];
    sides[0] = new ShaWorker(body);
    for (int b = 0; b < builds; b++) {
      sides[1 + b] = load(args[3 + b], body);
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    double[][] nanos = new double[sides.length][rounds];
    for (int round = -WARMUP_ROUNDS; round < rounds; round++) {
      for (int s = 0; s < sides.length; s++) {
        long cpu = threads.getCurrentThreadCpuTime();
        sides[s].applyAsLong(ops);
        if (round >= 0) {
          nanos[s][round] = (threads.getCurrentThreadCpuTime() - cpu) / (double) ops;
        }
      }
    }
    System.out.printf(
        "KeyDerivationBuildsAlternating shape=%s rounds=%d ops=%d, %s, loadavg %s%n",
        shape, rounds, ops, Runtime.version(), Files.readString(Path.of("/proc/loadavg")).trim());
    System.out.printf("median CPU ns/op raw SHA-256 %7.1f%n", BuildsInOneJvm.median(nanos[0]));
    for (int b = 1; b < sides.length; b++) {
      System.out.printf(
          "build %d %s: median CPU ns/op %7.1f, key / SHA-256 throughput %.3f, CPU vs build 1"
              + " %.3f%n",
          b,
          args[2 + b],
          BuildsInOneJvm.median(nanos[b]),
          BuildsInOneJvm.medianRatio(nanos[0], nanos[b]),
          BuildsInOneJvm.medianRatio(nanos[b], nanos[1]));
    }
  }

  /** Loads {@link KeyWorker} against the Idem classes of {@code build}, in a loader of its own. */
  @SuppressWarnings("unchecked")
  private static LongUnaryOperator load(String build, byte[] body) throws Exception {
    Object worker = BuildsInOneJvm.load(KeyWorker.class, build);
    ((Consumer<byte[]>) worker).accept(body);
    return (LongUnaryOperator) worker;
  }

  /** Raw SHA-256 of the body, the anchor. */
  private static final class ShaWorker implements LongUnaryOperator {
    private final byte[] body;
    private final MessageDigest sha;

    ShaWorker(byte[] body) throws Exception {
      this.body = body;
      this.sha = MessageDigest.getInstance("SHA-256");
    }

    @Override
    public long applyAsLong(long ops) {
      long sink = 0;
      for (long i = 0; i < ops; i++) {
        sink += sha.digest(body)[0];
      }
      return sink;
    }
  }

  /**
   * The default key of one event, loaded once per build (public with a public constructor for the
   * loader).
   */
  public static final class KeyWorker implements LongUnaryOperator, Consumer<byte[]> {
    private final KeyRule key = KeyRule.defaultKey();
    private InboundEvent event;

    /** Creates a worker; {@link #accept} gives it its body. */
    public KeyWorker() {}

    @Override
    public void accept(byte[] body) {
      event =
          InboundEvent.builder().body(body).principal("https://auth.example", "shop-42").build();
    }

    @Override
    public long applyAsLong(long ops) {
      long sink = 0;
      for (long i = 0; i < ops; i++) {
        sink += key.derive(event).hashCode();
      }
      return sink;
    }
  }
}
