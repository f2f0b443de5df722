package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sliding refresh under group commit is queued for the next group rather than written by the
 * thread that found the duplicate: the duplicate is answered before the refresh is written, and
 * every later step on the key (an inspect, a reserve, the sweeper) waits for that group and sees
 * the moved deadline, never the old one. To keep the refresh unwritten without timing, a first
 * group (another key's commit) is held at its sync by a gate ({@link Writer#beforeGroupSync}); the
 * refresh then waits in the queue for the next group.
 */
@Timeout(120)
class QueuedRefreshTest {
  private static final Ttl SLIDING = new Ttl(10_000, Expiry.SLIDING);

  @TempDir Path dir;
  private final ManualTimeSource clock = new ManualTimeSource();
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final CountDownLatch syncing = new CountDownLatch(1);
  private final CountDownLatch gate = new CountDownLatch(1);
  private RocksDbDedupStore store;

  @BeforeEach
  void open() {
    store = openStore();
  }

  private RocksDbDedupStore openStore() {
    return Fixtures.groupCommitStore(dir, clock);
  }

  @AfterEach
  void close() {
    gate.countDown();
    threads.shutdownNow();
    store.close();
  }

  /** Commits {@code k} at {@code now} with the sliding window, synchronously. */
  private void committed(DedupKey k, long now) {
    long t = token();
    assertThat(store.reserve(reserve(ORDERS, k, t, now, SLIDING, null)))
        .isInstanceOf(ReserveResult.Acquired.class);
    assertThat(store.commit(commit(ORDERS, k, t, now, SLIDING, null)))
        .isEqualTo(SettleResult.APPLIED);
  }

  /**
   * Holds the next group at its sync, with another key's commit in it (a day's window, so that no
   * sweep here removes it), until the gate opens.
   */
  private CompletionStage<SettleResult> holdAGroup(long now) throws InterruptedException {
    Fixtures.holdSyncs(store, syncing, gate);
    DedupKey other = key("held-group");
    long t = token();
    store.reserve(reserve(ORDERS, other, t, now, Fixtures.DAY_SLIDING, null));
    CompletionStage<SettleResult> held =
        store.commitAsync(commit(ORDERS, other, t, now, Fixtures.DAY_SLIDING, null));
    assertThat(syncing.await(30, TimeUnit.SECONDS)).isTrue();
    return held;
  }

  private static <T> T result(Future<T> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  /**
   * Commits a key at t0 with a 10 s sliding window, holds a group, hits the key at t0 + 8 s (its
   * refresh to t0 + 18 s queued behind the held group, unwritten), then runs {@code step} at t0 +
   * 12 s (after the old deadline) on another thread, checks that it waits, opens the gate and
   * returns what the step answered.
   */
  private <T> T afterAQueuedRefresh(String name, java.util.function.LongFunction<T> step)
      throws Exception {
    long t0 = clock.wallMillis();
    DedupKey k = key(name);
    committed(k, t0);
    CompletionStage<SettleResult> held = holdAGroup(t0);
    // the duplicate is answered at once, with the refreshed deadline, its refresh still queued
    assertThat(store.reserve(reserve(ORDERS, k, token(), t0 + 8_000, SLIDING, null)))
        .isEqualTo(new ReserveResult.Duplicate(t0, t0 + 18_000, null));
    assertThat(store.writer().queuedForTest()).isEqualTo(1);

    Future<T> answer = threads.submit(() -> step.apply(t0 + 12_000));
    // the step waits for the refresh's group: it queued a wait behind it and is not answered
    await().atMost(Duration.ofSeconds(30)).until(() -> store.writer().queuedForTest() == 2);
    assertThat(answer).isNotDone();

    gate.countDown();
    assertThat(held.toCompletableFuture().get(30, TimeUnit.SECONDS))
        .isEqualTo(SettleResult.APPLIED);
    return result(answer);
  }

  @Test
  void anInspectAfterTheOldDeadlineWaitsForTheQueuedRefreshAndSeesTheKeyLive() throws Exception {
    KeyState seen =
        afterAQueuedRefresh("inspected", now -> store.inspect(ORDERS, key("inspected"), now));
    assertThat(seen).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aReserveAfterTheOldDeadlineWaitsForTheQueuedRefreshAndIsADuplicate() throws Exception {
    long t0 = clock.wallMillis();
    ReserveResult seen =
        afterAQueuedRefresh(
            "again",
            now -> store.reserve(reserve(ORDERS, key("again"), token(), now, SLIDING, null)));
    assertThat(seen).isEqualTo(new ReserveResult.Duplicate(t0, t0 + 22_000, null));
  }

  @Test
  void aSweepAfterTheOldDeadlineWaitsForTheQueuedRefreshAndKeepsTheKey() throws Exception {
    long t0 = clock.wallMillis();
    long swept = afterAQueuedRefresh("swept", store::sweepExpired);
    assertThat(swept).isZero();
    assertThat(store.inspect(ORDERS, key("swept"), t0 + 12_000))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aQueuedRefreshIsWrittenBeforeTheStoreCloses() throws Exception {
    // given: a refresh (to t0 + 18 s) queued behind a held group
    long t0 = clock.wallMillis();
    DedupKey k = key("webhook-43");
    committed(k, t0);
    holdAGroup(t0);
    assertThat(store.reserve(reserve(ORDERS, k, token(), t0 + 8_000, SLIDING, null)))
        .isInstanceOf(ReserveResult.Duplicate.class);

    // when: the store closes (on another thread: it waits for the queue) and the gate opens
    Future<?> closing = threads.submit(store::close);
    gate.countDown();
    result(closing);

    // then: a store opened on the directory has the refreshed deadline
    store = openStore();
    assertThat(store.inspect(ORDERS, k, t0 + 12_000)).isInstanceOf(KeyState.Committed.class);
    assertThat(store.sweepExpired(t0 + 12_000)).isZero();
    assertThat(store.sweepExpired(t0 + 18_000)).isEqualTo(1);
  }
}
