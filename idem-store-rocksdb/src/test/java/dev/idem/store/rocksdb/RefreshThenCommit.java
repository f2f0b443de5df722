package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Expiry;
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
 * The child JVM of {@link RocksDbCrashTest}'s refresh test: commits {@code keys} keys with a
 * sliding window at {@link #T0}, hits each again as a duplicate at {@link #T1} (an unsynced
 * refresh), then commits one more key (a synced write), prints {@code DONE} and waits to be killed
 * with SIGKILL.
 *
 * <p>Arguments: directory, durability, keys.
 */
public final class RefreshThenCommit {
  static final Scope SCOPE = Scope.of("refresh-then-commit");
  static final Ttl WINDOW = new Ttl(60_000, Expiry.SLIDING);
  static final long T0 = 1_000_000;
  static final long T1 = T0 + 30_000;

  private RefreshThenCommit() {}

  /** The i-th refreshed key; the key committed last is {@code key(-1)}. */
  static DedupKey key(long i) {
    return CrashStorm.key(254, 254, i + 1);
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    Durability durability = Durability.valueOf(args[1]);
    int keys = Integer.parseInt(args[2]);
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "US-ASCII");
    RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir).durability(durability).sweepInterval(Duration.ZERO).build();
    for (long i = 0; i < keys; i++) {
      reserveAndCommit(store, key(i), T0, i + 1);
    }
    for (long i = 0; i < keys; i++) {
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, key(i), null, -1 - i, T1, 60_000, WINDOW));
      if (!(hit instanceof ReserveResult.Duplicate d) || d.expiresAtMillis() != T1 + 60_000) {
        throw new IllegalStateException("the duplicate of " + key(i) + " answered " + hit);
      }
    }
    reserveAndCommit(store, key(-1), T1, 1_000_000);
    out.println("DONE");
    while (true) {
      LockSupport.park();
    }
  }

  private static void reserveAndCommit(RocksDbDedupStore store, DedupKey k, long now, long token) {
    ReserveResult r = store.reserve(new ReserveRequest(SCOPE, k, null, token, now, 60_000, WINDOW));
    if (!(r instanceof ReserveResult.Acquired)) {
      throw new IllegalStateException("fresh key " + k + " answered " + r);
    }
    SettleResult s = store.commit(new CommitRequest(SCOPE, k, token, now, WINDOW, null));
    if (s != SettleResult.APPLIED) {
      throw new IllegalStateException("commit of " + k + " answered " + s);
    }
  }
}
