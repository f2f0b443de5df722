package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.ManualTimeSource;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.SettleResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RocksDbOutboxTest {
  private static final String QUEUE = "shop-orders";
  @TempDir Path dir;
  private final ManualTimeSource clock = new ManualTimeSource();
  private RocksDbDedupStore store;

  private RocksDbDedupStore open() {
    store = RocksDbDedupStore.builder(dir).sweepInterval(Duration.ZERO).timeSource(clock).build();
    return store;
  }

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
  }

  /** Reserves a key and commits it with a message; returns the commit's result. */
  private SettleResult accept(String id, long now) {
    DedupKey k = key(id);
    long t = token();
    store.reserve(reserve(ORDERS, k, t, now));
    return store.commitAndEnqueue(commit(ORDERS, k, t, now), message(id));
  }

  private static OutboxMessage message(String id) {
    return new OutboxMessage(
        QUEUE, key(id), ("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void commitAndEnqueueCommitsTheKeyAndAppendsTheMessageTogether() {
    // given
    open();
    long now = clock.wallMillis();

    // when
    SettleResult result = accept("o-1", now);

    // then
    assertThat(result).isEqualTo(SettleResult.APPLIED);
    assertThat(store.inspect(ORDERS, key("o-1"), now)).isInstanceOf(KeyState.Committed.class);
    assertThat(store.depth(QUEUE)).isEqualTo(1);
    List<OutboxRecord> claimed = store.claim(QUEUE, 10, now, 60_000);
    assertThat(claimed).hasSize(1);
    OutboxRecord r = claimed.get(0);
    assertThat(r.key()).isEqualTo(key("o-1"));
    assertThat(new String(r.payload(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":\"o-1\"}");
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.enqueuedAtMillis()).isEqualTo(now);
    assertThat(r.lastError()).isNull();
  }

  @Test
  void aStaleCommitAppendsNothingAndARetriedCommitAppendsNoSecondMessage() {
    // given
    open();
    long now = clock.wallMillis();
    DedupKey k = key("o-1");
    long t = token();
    store.reserve(reserve(ORDERS, k, t, now));

    // when
    SettleResult stale =
        store.commitAndEnqueue(commit(ORDERS, k, t + 1_000_000, now), message("o-1"));
    SettleResult first = store.commitAndEnqueue(commit(ORDERS, k, t, now), message("o-1"));
    SettleResult retried = store.commitAndEnqueue(commit(ORDERS, k, t, now + 1), message("o-1"));

    // then
    assertThat(stale).isEqualTo(SettleResult.STALE);
    assertThat(first).isEqualTo(SettleResult.APPLIED);
    assertThat(retried).isEqualTo(SettleResult.APPLIED);
    assertThat(store.depth(QUEUE)).isEqualTo(1);
  }

  @Test
  void claimHandsOutInAppendOrderAndHidesClaimedEntriesUntilTheClaimRunsOut() {
    // given
    open();
    long now = clock.wallMillis();
    for (int i = 0; i < 5; i++) {
      accept("o-" + i, now);
    }

    // when
    List<OutboxRecord> first = store.claim(QUEUE, 3, now, 10_000);
    List<OutboxRecord> second = store.claim(QUEUE, 10, now + 1, 10_000);
    List<OutboxRecord> none = store.claim(QUEUE, 10, now + 9_999, 10_000);
    List<OutboxRecord> again = store.claim(QUEUE, 10, now + 10_000, 10_000);

    // then
    assertThat(first)
        .extracting(OutboxRecord::key)
        .containsExactly(key("o-0"), key("o-1"), key("o-2"));
    assertThat(first).extracting(OutboxRecord::id).isSorted();
    assertThat(second).extracting(OutboxRecord::key).containsExactly(key("o-3"), key("o-4"));
    assertThat(none).isEmpty();
    assertThat(again)
        .extracting(OutboxRecord::key)
        .containsExactly(key("o-0"), key("o-1"), key("o-2"));
    assertThat(again).extracting(OutboxRecord::attempts).containsOnly(2);
    assertThat(store.depth(QUEUE)).isEqualTo(5);
  }

  @Test
  void acknowledgeRemovesTheEntryOnce() {
    // given
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    OutboxRecord r = store.claim(QUEUE, 1, now, 10_000).get(0);

    // when
    boolean acked = store.acknowledge(QUEUE, r.id());

    // then
    assertThat(acked).isTrue();
    assertThat(store.acknowledge(QUEUE, r.id())).isFalse();
    assertThat(store.depth(QUEUE)).isZero();
    assertThat(store.claim(QUEUE, 10, now + 60_000, 10_000)).isEmpty();
  }

  @Test
  void rescheduleRecordsTheErrorAndHidesTheEntryUntilItsTime() {
    // given
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    OutboxRecord r = store.claim(QUEUE, 1, now, 10_000).get(0);

    // when
    store.reschedule(QUEUE, r.id(), now + 5_000, "HTTP 503 from downstream");

    // then
    assertThat(store.claim(QUEUE, 10, now + 4_999, 10_000)).isEmpty();
    OutboxRecord retry = store.claim(QUEUE, 10, now + 5_000, 10_000).get(0);
    assertThat(retry.id()).isEqualTo(r.id());
    assertThat(retry.attempts()).isEqualTo(2);
    assertThat(retry.lastError()).isEqualTo("HTTP 503 from downstream");
  }

  @Test
  void deadLetterMovesTheEntryToItsOwnColumnFamily() throws Exception {
    // given
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    accept("o-2", now);
    OutboxRecord r = store.claim(QUEUE, 1, now, 10_000).get(0);

    // when
    store.deadLetter(QUEUE, r.id(), "HTTP 400: rejected", now + 7);

    // then
    assertThat(store.depth(QUEUE)).isEqualTo(1);
    List<DeadLetter> dead = store.deadLetters(QUEUE, 10);
    assertThat(dead).hasSize(1);
    DeadLetter d = dead.get(0);
    assertThat(d.id()).isEqualTo(r.id());
    assertThat(d.key()).isEqualTo(key("o-1"));
    assertThat(d.attempts()).isEqualTo(1);
    assertThat(d.enqueuedAtMillis()).isEqualTo(now);
    assertThat(d.deadAtMillis()).isEqualTo(now + 7);
    assertThat(d.reason()).isEqualTo("HTTP 400: rejected");
    assertThat(store.deadLetters("other-queue", 10)).isEmpty();
    store.close();
    assertThat(RawDb.count(dir, Handles.CF_DEAD_LETTERS, OutboxCodec.queuePrefix(QUEUE)))
        .isEqualTo(1);
    assertThat(RawDb.count(dir, Handles.CF_OUTBOX, OutboxCodec.queuePrefix(QUEUE))).isEqualTo(1);
    store = null;
  }

  @Test
  void queuesAreIndependent() {
    // given
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    long t = token();
    store.reserve(reserve(ORDERS, key("r-1"), t, now));
    store.commitAndEnqueue(
        commit(ORDERS, key("r-1"), t, now),
        new OutboxMessage("refunds", key("r-1"), new byte[] {1}));

    // when
    List<OutboxRecord> refunds = store.claim("refunds", 10, now, 1_000);

    // then
    assertThat(refunds).extracting(OutboxRecord::queue).containsExactly("refunds");
    assertThat(store.depth(QUEUE)).isEqualTo(1);
    assertThat(store.depth("refunds")).isEqualTo(1);
  }

  @Test
  void outboxEntriesDeadLettersAndIdsSurviveAReopen() {
    // given: one entry claimed, one dead letter, one entry waiting
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    accept("o-2", now);
    accept("o-3", now);
    List<OutboxRecord> claimed = store.claim(QUEUE, 2, now, 10_000);
    store.deadLetter(QUEUE, claimed.get(1).id(), "gave up", now);
    long highest = claimed.get(1).id() + 1;
    store.close();

    // when
    open();

    // then: the claim's attempt count survived and new ids never reuse old ones
    assertThat(store.depth(QUEUE)).isEqualTo(2);
    assertThat(store.deadLetters(QUEUE, 10))
        .extracting(DeadLetter::key)
        .containsExactly(key("o-2"));
    List<OutboxRecord> after = store.claim(QUEUE, 10, now + 10_000, 10_000);
    assertThat(after).extracting(OutboxRecord::key).containsExactly(key("o-1"), key("o-3"));
    assertThat(after.get(0).attempts()).isEqualTo(2);
    accept("o-4", now + 10_001);
    OutboxRecord fresh = store.claim(QUEUE, 10, now + 10_001, 10_000).get(0);
    assertThat(fresh.key()).isEqualTo(key("o-4"));
    assertThat(fresh.id()).isGreaterThan(highest);
  }

  @Test
  void concurrentClaimersNeverGetTheSameEntry() throws Exception {
    // given
    open();
    long now = clock.wallMillis();
    for (int i = 0; i < 200; i++) {
      accept("o-" + i, now);
    }
    Set<Long> seen = ConcurrentHashMap.newKeySet();
    AtomicInteger handedOut = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      // when: four deliverers claim five at a time until the queue has nothing left to hand out
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        done.add(
            pool.submit(
                () -> {
                  for (List<OutboxRecord> batch = store.claim(QUEUE, 5, now, 60_000);
                      !batch.isEmpty();
                      batch = store.claim(QUEUE, 5, now, 60_000)) {
                    batch.forEach(r -> seen.add(r.id()));
                    handedOut.addAndGet(batch.size());
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    // then
    assertThat(handedOut.get()).isEqualTo(200);
    assertThat(seen).hasSize(200);
  }

  @Test
  void rescheduleAndDeadLetterOfAGoneEntryDoNothing() {
    // given: an entry acknowledged by another deliverer whose claim overlapped
    open();
    long now = clock.wallMillis();
    accept("o-1", now);
    OutboxRecord r = store.claim(QUEUE, 1, now, 10_000).get(0);
    store.acknowledge(QUEUE, r.id());

    // when
    store.reschedule(QUEUE, r.id(), now, "late failure report");
    store.deadLetter(QUEUE, r.id(), "late give-up", now);

    // then
    assertThat(store.depth(QUEUE)).isZero();
    assertThat(store.deadLetters(QUEUE, 10)).isEmpty();
    assertThat(store.claim(QUEUE, 10, now + 60_000, 10_000)).isEmpty();
  }

  @Test
  void claimArgumentsAreChecked() {
    open();

    assertThatThrownBy(() -> store.claim(QUEUE, 0, 1, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.claim(QUEUE, 1, 1, 0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
