package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/** Requests and keys for the store's own tests. */
final class Fixtures {
  static final Scope ORDERS = Scope.of("shop-orders");
  static final Scope REFUNDS = Scope.of("shop-refunds");
  static final long LEASE = 30_000;
  static final Ttl DAY_SLIDING = new Ttl(86_400_000, Expiry.SLIDING);
  static final Ttl DAY_FIXED = new Ttl(86_400_000, Expiry.FIXED);
  private static final AtomicLong TOKENS = new AtomicLong(1);

  private Fixtures() {}

  /** A group-commit store on {@code dir} on the given clock, with no background sweeper. */
  static RocksDbDedupStore groupCommitStore(Path dir, TimeSource clock) {
    return RocksDbDedupStore.builder(dir)
        .durability(Durability.GROUP_COMMIT)
        .sweepInterval(Duration.ZERO)
        .timeSource(clock)
        .build();
  }

  /**
   * Holds every group of the store's writer at its sync ({@link Writer#beforeGroupSync}) until
   * {@code gate} opens, counting {@code reached} down each time a group gets there.
   */
  static void holdSyncs(RocksDbDedupStore store, CountDownLatch reached, CountDownLatch gate) {
    store.writer().beforeGroupSync =
        () -> {
          reached.countDown();
          try {
            gate.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
  }

  static DedupKey key(String material) {
    return DedupKey.ofDigest(
        dev.idem.internal.Sha256Words.newDigest()
            .digest(material.getBytes(StandardCharsets.UTF_8)));
  }

  static Fingerprint fingerprint(String payload) {
    return Fingerprint.sha256(payload.getBytes(StandardCharsets.UTF_8));
  }

  static long token() {
    return TOKENS.getAndIncrement();
  }

  static ReserveRequest reserve(
      Scope scope, DedupKey key, long token, long now, Ttl ttl, @Nullable Fingerprint fp) {
    return new ReserveRequest(scope, key, fp, token, now, LEASE, ttl);
  }

  static ReserveRequest reserve(Scope scope, DedupKey key, long token, long now) {
    return reserve(scope, key, token, now, DAY_SLIDING, null);
  }

  static CommitRequest commit(
      Scope scope, DedupKey key, long token, long now, Ttl ttl, byte @Nullable [] result) {
    return new CommitRequest(scope, key, token, now, ttl, result);
  }

  static CommitRequest commit(Scope scope, DedupKey key, long token, long now) {
    return commit(scope, key, token, now, DAY_SLIDING, null);
  }

  static ReleaseRequest release(Scope scope, DedupKey key, long token, long now) {
    return new ReleaseRequest(scope, key, token, now);
  }
}
