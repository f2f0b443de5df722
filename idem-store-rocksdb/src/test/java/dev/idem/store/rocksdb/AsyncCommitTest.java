package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Reservation;
import dev.idem.Settlement;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link RocksDbDedupStore#commitAsync} under group commit: it returns before the group's sync, its
 * stage completes only after it, nothing reads the commit before it, and a failed sync fails the
 * stage. The group's sync is held by a gate in the writer ({@link Writer#beforeGroupSync}), so no
 * test depends on timing. (A commit that waited for the sync would hang on the held gate: the class
 * timeout turns that into a failure.)
 */
@Timeout(120)
class AsyncCommitTest {
  @TempDir Path dir;
  private final ManualTimeSource clock = new ManualTimeSource();
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final CountDownLatch syncing = new CountDownLatch(1);
  private final CountDownLatch gate = new CountDownLatch(1);
  private RocksDbDedupStore store;

  @BeforeEach
  void open() {
    store = Fixtures.groupCommitStore(dir, clock);
  }

  @AfterEach
  void close() {
    gate.countDown();
    threads.shutdownNow();
    store.close();
  }

  /**
   * Only group commit commits later than commitAsync returns; a caller skips the stage otherwise.
   */
  @Test
  void onlyGroupCommitSaysItCommitsAsynchronously() {
    assertThat(store.commitsAsynchronously()).isTrue();
    for (Durability other : new Durability[] {Durability.FSYNC, Durability.OS_BUFFERED}) {
      try (RocksDbDedupStore s =
          RocksDbDedupStore.builder(dir.resolve(other.name()))
              .durability(other)
              .sweepInterval(Duration.ZERO)
              .build()) {
        assertThat(s.commitsAsynchronously()).as("%s", other).isFalse();
      }
    }
  }

  /** Holds every group's sync until {@link #gate} opens, after saying it reached it. */
  private void holdSyncs() {
    Fixtures.holdSyncs(store, syncing, gate);
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  private static <T> T join(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void theCommitCompletesOnlyAfterItsGroupSynced_andNothingReadsItBefore() throws Exception {
    DedupKey k = key("evt-1");
    long t = token();
    assertThat(store.reserve(reserve(ORDERS, k, t, clock.wallMillis())))
        .isInstanceOf(ReserveResult.Acquired.class);
    holdSyncs();

    // when: the commit is queued by a thread that finds no leader: it returns at once, and the
    // store's own thread leads the group and is held at its sync
    CompletionStage<SettleResult> queued =
        store.commitAsync(commit(ORDERS, k, t, clock.wallMillis()));
    assertThat(syncing.await(30, TimeUnit.SECONDS)).isTrue();
    // and another thread commits asynchronously meanwhile: it returns at once, not yet complete
    DedupKey k2 = key("evt-2");
    long t2 = token();
    store.reserve(reserve(ORDERS, k2, t2, clock.wallMillis()));
    CompletionStage<SettleResult> second =
        store.commitAsync(commit(ORDERS, k2, t2, clock.wallMillis()));
    Future<KeyState> inspected =
        threads.submit(() -> store.inspect(ORDERS, k2, clock.wallMillis()));
    Future<ReserveResult> duplicate =
        threads.submit(() -> store.reserve(reserve(ORDERS, k2, token(), clock.wallMillis())));

    // then: while the sync is held, neither commit is answered and the key is read by no one
    assertThat(second.toCompletableFuture()).isNotDone();
    assertThat(queued.toCompletableFuture()).isNotDone();
    assertThat(inspected).isNotDone();
    assertThat(duplicate).isNotDone();

    gate.countDown();
    assertThat(join(queued)).isEqualTo(SettleResult.APPLIED);
    assertThat(join(second)).isEqualTo(SettleResult.APPLIED);
    assertThat(await(inspected)).isInstanceOf(KeyState.Committed.class);
    assertThat(await(duplicate)).isInstanceOf(ReserveResult.Duplicate.class);
    // and the commit is in the store after a restart
    store.close();
    open();
    assertThat(store.inspect(ORDERS, k2, clock.wallMillis()))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aFailedSyncFailsTheStage_andTheReservationStaysOpen() throws Exception {
    Deduplicator d = Deduplicator.builder(store, ORDERS).timeSource(clock).build();
    Decision decision = d.reserve(key("evt-3"));
    assertThat(decision).isInstanceOf(Decision.Acquired.class);
    Reservation r = ((Decision.Acquired) decision).reservation();
    AtomicBoolean failOnce = new AtomicBoolean(true);
    store.writer().beforeGroupSync =
        () -> {
          if (failOnce.getAndSet(false)) {
            throw new IllegalStateException("the disk went away");
          }
        };

    CompletionStage<Settlement> committed = r.commitAsync(null);

    assertThat(committed.toCompletableFuture())
        .failsWithin(Duration.ofSeconds(30))
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOf(StoreUnavailableException.class);
    assertThat(r.settlement()).isNull();
  }

  @Test
  void aSynchronousCommitQueuedBehindQueuedCommitsIsLedAndReturns() throws Exception {
    holdSyncs();
    DedupKey k = key("evt-4");
    long t = token();
    store.reserve(reserve(ORDERS, k, t, clock.wallMillis()));
    CompletableFuture<CompletionStage<SettleResult>> queued =
        CompletableFuture.supplyAsync(
            () -> store.commitAsync(commit(ORDERS, k, t, clock.wallMillis())), threads);
    assertThat(syncing.await(30, TimeUnit.SECONDS)).isTrue();
    DedupKey k2 = key("evt-5");
    long t2 = token();
    store.reserve(reserve(ORDERS, k2, t2, clock.wallMillis()));
    Future<SettleResult> sync =
        threads.submit(() -> store.commit(commit(ORDERS, k2, t2, clock.wallMillis())));
    DedupKey k3 = key("evt-6");
    long t3 = token();
    store.reserve(reserve(ORDERS, k3, t3, clock.wallMillis()));
    CompletionStage<SettleResult> after =
        store.commitAsync(commit(ORDERS, k3, t3, clock.wallMillis()));

    gate.countDown();

    assertThat(join(await(queued))).isEqualTo(SettleResult.APPLIED);
    assertThat(await(sync)).isEqualTo(SettleResult.APPLIED);
    assertThat(join(after)).isEqualTo(SettleResult.APPLIED);
  }
}
