package dev.idem.benchmarks;

import dev.idem.key.InboundEvent;
import dev.idem.key.KeyRule;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The default key vs raw SHA-256 of the same 1 KiB body ({@link KeyDerivationBenchmark}'s bodies),
 * on the calling thread's CPU time instead of wall time, in alternating slots (key, SHA-256, key,
 * ...): a companion to {@link KeyDerivationBenchmark} for a loaded machine. Both sides are
 * compute-bound on a cache-resident body, so CPU time hardly depends on how many other threads
 * share the cores, where JMH's wall-clock scores then swing by several times. Prints the mean CPU
 * ns per operation of each and the median of the rounds' ratios (SHA-256 time / key time, i.e. key
 * throughput / SHA-256 throughput; the target is at least 0.25).
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KeyDerivationCpuTime \
 *     SHAPE [ROUNDS [OPS_PER_SLOT]]      e.g. ... KeyDerivationCpuTime numbers 30 20000
 * </pre>
 */
public final class KeyDerivationCpuTime {
  private static final int WARMUP_ROUNDS = 3;

  private KeyDerivationCpuTime() {}

  /**
   * Runs the comparison.
   *
   * @param args {@code order} or {@code numbers}, then optionally the rounds and the operations per
   *     slot
   * @throws Exception if SHA-256 is missing
   */
  public static void main(String[] args) throws Exception {
    String shape = args.length > 0 ? args[0] : "numbers";
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int ops = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    String text =
        shape.equals("numbers")
            ? KeyDerivationBenchmark.numbersBody()
            : KeyDerivationBenchmark.BODY;
    byte[] body = text.getBytes(StandardCharsets.UTF_8);
    InboundEvent event =
        InboundEvent.builder().body(body).principal("https://auth.example", "shop-42").build();
    KeyRule key = KeyRule.defaultKey();
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    double[] ratios = new double[rounds];
    double keyNanos = 0;
    double shaNanos = 0;
    long sink = 0;
    for (int round = -WARMUP_ROUNDS; round < rounds; round++) {
      long t0 = cpu.getCurrentThreadCpuTime();
      for (int i = 0; i < ops; i++) {
        sink += key.derive(event).hashCode();
      }
      long t1 = cpu.getCurrentThreadCpuTime();
      for (int i = 0; i < ops; i++) {
        sink += sha.digest(body)[0];
      }
      long t2 = cpu.getCurrentThreadCpuTime();
      if (round >= 0) {
        ratios[round] = (double) (t2 - t1) / (t1 - t0);
        keyNanos += (double) (t1 - t0) / ops;
        shaNanos += (double) (t2 - t1) / ops;
      }
    }
    Arrays.sort(ratios);
    System.out.printf(
        "KeyDerivationCpuTime shape=%s rounds=%d ops=%d %s: default key %.0f ns, raw SHA-256 %.0f"
            + " ns (CPU per op); key / SHA-256 throughput median %.3f (lowest %.3f, highest %.3f)"
            + " [%d]%n",
        shape,
        rounds,
        ops,
        Runtime.version(),
        keyNanos / rounds,
        shaNanos / rounds,
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1],
        sink & 1);
  }
}
