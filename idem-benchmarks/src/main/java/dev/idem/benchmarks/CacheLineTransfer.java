package dev.idem.benchmarks;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * What this machine charges for moving one cache line from one core to another: two threads hand a
 * counter back and forth, each spinning until the other has written it and then writing the next
 * value, so every hand-off moves the counter's line once. Prints the median, lowest and highest
 * nanoseconds per hand-off over the rounds.
 *
 * <p>It is the unit in which {@link MemoryStoreAlternating}'s two-thread figures are paid: an event
 * on a scope that two threads share writes a few cache lines that the other thread wrote last (a
 * stripe's lock word, the tail of its recency list, bucket heads; see docs/BENCHMARKS.md), and each
 * of those costs about one hand-off. The figure differs by several times between hosts (two
 * hardware threads of one core share their caches; two cores of one chip share the last level; a
 * VM's two vCPUs may sit on either), which is why the two-thread ratio to Camel moves between
 * machines while the one-thread ratio hardly does. Run it with nothing else busy: if the two
 * threads must share one CPU, every hand-off waits for a time slice and the figure is that of the
 * scheduler, not of the caches.
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.CacheLineTransfer [ROUNDS [HANDOFFS]]
 * </pre>
 */
public final class CacheLineTransfer {
  private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

  /** The counter sits in the middle of its own 256 bytes, away from any other object's fields. */
  private static final int AT = 16;

  private static final int WARMUP_ROUNDS = 3;

  private CacheLineTransfer() {}

  /**
   * Runs the rounds.
   *
   * @param args optionally the rounds (default 20) and the hand-offs per round (default 2,000,000)
   * @throws InterruptedException if interrupted while waiting for the other thread
   */
  public static void main(String[] args) throws InterruptedException {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    int handoffs = args.length > 1 ? Integer.parseInt(args[1]) : 2_000_000;
    double[] nanos = new double[rounds];
    for (int round = -WARMUP_ROUNDS; round < rounds; round++) {
      double n = handoffNanos(handoffs);
      if (round >= 0) {
        nanos[round] = n;
      }
    }
    Arrays.sort(nanos);
    System.out.printf(
        "CacheLineTransfer rounds=%d handoffs=%d cores=%d %s: ns per hand-off median %.1f"
            + " (lowest %.1f, highest %.1f)%n",
        rounds,
        handoffs,
        Runtime.getRuntime().availableProcessors(),
        Runtime.version(),
        nanos[rounds / 2],
        nanos[0],
        nanos[rounds - 1]);
  }

  /**
   * Hands a counter back and forth between the calling thread and a new one {@code handoffs} times
   * and returns the wall-clock nanoseconds per hand-off.
   *
   * @param handoffs how many hand-offs (at least 2)
   * @return nanoseconds per hand-off
   * @throws InterruptedException if interrupted while waiting for the other thread
   */
  static double handoffNanos(int handoffs) throws InterruptedException {
    long[] line = new long[2 * AT];
    int half = Math.max(1, handoffs / 2);
    Thread other = new Thread(() -> answer(line, half), "cache-line-transfer");
    other.start();
    long t0 = System.nanoTime();
    for (long i = 0; i < half; i++) {
      while ((long) SLOT.getAcquire(line, AT) != 2 * i) {
        Thread.onSpinWait();
      }
      SLOT.setRelease(line, AT, 2 * i + 1);
    }
    other.join();
    return (double) (System.nanoTime() - t0) / (2L * half);
  }

  /** The other side: waits for each odd value and answers with the next even one. */
  private static void answer(long[] line, int half) {
    for (long i = 0; i < half; i++) {
      while ((long) SLOT.getAcquire(line, AT) != 2 * i + 1) {
        Thread.onSpinWait();
      }
      SLOT.setRelease(line, AT, 2 * i + 2);
    }
  }
}
