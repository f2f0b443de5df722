package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The child JVM of {@link RocksDbCrashTest}: a write storm that never stops by itself. Each thread
 * reserves and commits fresh keys (every fourth with an outbox message) and prints {@code C <hex>}
 * or {@code O <hex>} only after the commit returned. The parent kills it with SIGKILL.
 *
 * <p>Arguments: directory, durability, threads, round, and optionally a compaction interval in
 * milliseconds: a further thread then flushes and compacts the store at that interval, so that
 * RocksDB switches WAL files often and the storm writes into recycled ones.
 */
public final class CrashStorm {
  static final Scope SCOPE = Scope.of("crash-storm");
  static final String QUEUE = "crash-storm";

  private CrashStorm() {}

  /** A key that looks like a SHA-256 digest (uniform words), unique per round, thread and index. */
  static DedupKey key(int round, int thread, long i) {
    long seed = ((long) round << 56) ^ ((long) thread << 40) ^ i;
    return DedupKey.ofWords(mix(seed), mix(seed + 1), mix(seed + 2), seed);
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    Durability durability = Durability.valueOf(args[1]);
    int threads = Integer.parseInt(args[2]);
    int round = Integer.parseInt(args[3]);
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "US-ASCII");
    RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).durability(durability).sweepInterval(Duration.ZERO).build();
    long compactEveryMillis = args.length > 4 ? Long.parseLong(args[4]) : 0;
    if (compactEveryMillis > 0) {
      Thread compactor =
          new Thread(
              () -> {
                while (true) {
                  store.compact();
                  LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(compactEveryMillis));
                }
              },
              "storm-compactor");
      compactor.start();
    }
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread writer =
          new Thread(
              () -> {
                long now = System.currentTimeMillis();
                for (long i = 0; ; i++) {
                  DedupKey k = key(round, thread, i);
                  long token = (((long) round << 48) | ((long) thread << 40) | i) + 1;
                  ReserveResult r =
                      store.reserve(
                          new ReserveRequest(SCOPE, k, null, token, now, 600_000, Ttl.NONE));
                  if (!(r instanceof ReserveResult.Acquired)) {
                    throw new IllegalStateException("fresh key " + k + " answered " + r);
                  }
                  CommitRequest c = new CommitRequest(SCOPE, k, token, now, Ttl.NONE, null);
                  boolean withMessage = i % 4 == 0;
                  SettleResult s =
                      withMessage
                          ? store.commitAndEnqueue(c, new OutboxMessage(QUEUE, k, new byte[] {1}))
                          : store.commit(c);
                  if (s != SettleResult.APPLIED) {
                    throw new IllegalStateException("commit of " + k + " answered " + s);
                  }
                  String line = (withMessage ? "O " : "C ") + k.toHex();
                  synchronized (out) {
                    out.println(line);
                    out.flush();
                  }
                }
              },
              "storm-" + t);
      writer.start();
    }
    synchronized (out) {
      out.println("READY");
      out.flush();
    }
  }
}
