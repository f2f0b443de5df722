package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * The child JVM of {@link RocksDbCrashTest}'s reservation test: reserves {@code 2 * pairs} fresh
 * keys with a five-minute lease, commits the even ones, holds the odd ones, prints {@code HELD} and
 * waits to be killed with SIGKILL.
 *
 * <p>Arguments: directory, durability, pairs.
 */
public final class ReservationHolder {
  static final Scope SCOPE = Scope.of("reservation-holder");
  static final long LEASE = 300_000;

  private ReservationHolder() {}

  /** The i-th key: even ones are committed, odd ones held. */
  static DedupKey key(long i) {
    return CrashStorm.key(255, 255, i);
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    Durability durability = Durability.valueOf(args[1]);
    int pairs = Integer.parseInt(args[2]);
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "US-ASCII");
    RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).durability(durability).sweepInterval(Duration.ZERO).build();
    long now = System.currentTimeMillis();
    for (long i = 0; i < 2L * pairs; i++) {
      long token = i + 1;
      ReserveResult r =
          store.reserve(new ReserveRequest(SCOPE, key(i), null, token, now, LEASE, Ttl.NONE));
      if (!(r instanceof ReserveResult.Acquired)) {
        throw new IllegalStateException("fresh key " + key(i) + " answered " + r);
      }
      if (i % 2 == 0) {
        SettleResult s = store.commit(new CommitRequest(SCOPE, key(i), token, now, Ttl.NONE, null));
        if (s != SettleResult.APPLIED) {
          throw new IllegalStateException("commit of " + key(i) + " answered " + s);
        }
      }
    }
    out.println("HELD");
    while (true) {
      LockSupport.park();
    }
  }
}
