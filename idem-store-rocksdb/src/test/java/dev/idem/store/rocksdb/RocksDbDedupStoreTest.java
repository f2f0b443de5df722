package dev.idem.store.rocksdb;

import static dev.idem.store.rocksdb.Fixtures.DAY_FIXED;
import static dev.idem.store.rocksdb.Fixtures.DAY_SLIDING;
import static dev.idem.store.rocksdb.Fixtures.ORDERS;
import static dev.idem.store.rocksdb.Fixtures.REFUNDS;
import static dev.idem.store.rocksdb.Fixtures.commit;
import static dev.idem.store.rocksdb.Fixtures.fingerprint;
import static dev.idem.store.rocksdb.Fixtures.key;
import static dev.idem.store.rocksdb.Fixtures.release;
import static dev.idem.store.rocksdb.Fixtures.reserve;
import static dev.idem.store.rocksdb.Fixtures.token;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class RocksDbDedupStoreTest {
  @TempDir Path dir;
  private final ManualTimeSource clock = new ManualTimeSource();
  private final List<RocksDbDedupStore> opened = new ArrayList<>();

  @AfterEach
  void closeAll() {
    opened.forEach(RocksDbDedupStore::close);
  }

  private RocksDbDedupStore open(Durability durability) {
    return track(
        RocksDbDedupStore.builder(dir)
            .durability(durability)
            .sweepInterval(Duration.ZERO)
            .timeSource(clock)
            .build());
  }

  private RocksDbDedupStore open() {
    return open(Durability.GROUP_COMMIT);
  }

  private RocksDbDedupStore track(RocksDbDedupStore store) {
    opened.add(store);
    return store;
  }

  private RocksDbDedupStore reopen(RocksDbDedupStore store) {
    store.close();
    return open(store.config().durability());
  }

  @ParameterizedTest
  @EnumSource(Durability.class)
  void reopenKeepsCommittedKeysResultsFingerprintsAndLeases(Durability durability) {
    // given: a committed key with a result and fingerprint, a plain committed key, an in-flight key
    RocksDbDedupStore store = open(durability);
    long now = clock.wallMillis();
    DedupKey replayed = key("order-1");
    DedupKey plain = key("order-2");
    DedupKey held = key("order-3");
    long t1 = token();
    long t2 = token();
    long t3 = token();
    byte[] result = "{\"status\":201}".getBytes(StandardCharsets.UTF_8);
    store.reserve(reserve(ORDERS, replayed, t1, now, DAY_FIXED, fingerprint("a")));
    store.commit(commit(ORDERS, replayed, t1, now, DAY_FIXED, result));
    store.reserve(reserve(ORDERS, plain, t2, now, Ttl.NONE, null));
    store.commit(commit(ORDERS, plain, t2, now, Ttl.NONE, null));
    store.reserve(reserve(ORDERS, held, t3, now));

    // when: closed and opened again in this process (the in-flight key's holder still runs here;
    // a new process would start with no reservations, see RocksDbCrashTest)
    store = reopen(store);

    // then
    assertThat(store.inspect(ORDERS, replayed, now + 1))
        .isInstanceOfSatisfying(
            KeyState.Committed.class,
            c -> {
              assertThat(c.result()).isEqualTo(result);
              assertThat(c.fingerprint()).isEqualTo(fingerprint("a"));
              assertThat(c.committedAtMillis()).isEqualTo(now);
              assertThat(c.expiresAtMillis()).isEqualTo(now + DAY_FIXED.millis());
            });
    assertThat(store.inspect(ORDERS, plain, now + 1))
        .isEqualTo(new KeyState.Committed(now, Long.MAX_VALUE, null, null));
    assertThat(store.inspect(ORDERS, held, now + 1))
        .isEqualTo(new KeyState.InFlight(now, now + Fixtures.LEASE, null));
    assertThat(
            store.reserve(reserve(ORDERS, replayed, token(), now + 2, DAY_FIXED, fingerprint("b"))))
        .isInstanceOf(ReserveResult.Conflict.class);
    assertThat(store.reserve(reserve(ORDERS, held, token(), now + 2)))
        .isInstanceOf(ReserveResult.InFlight.class);
    // The lease survives with its token: the holder can still commit after the restart.
    assertThat(store.commit(commit(ORDERS, held, t3, now + 3))).isEqualTo(SettleResult.APPLIED);
  }

  @Test
  void reservationsAndReleasesWriteNothingAndOnlyTheCommitReachesTheDisk() throws Exception {
    // given: a reservation committed, one released, one still held, one replaced after its lease
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    long committed = token();
    long released = token();
    store.reserve(reserve(ORDERS, key("committed"), committed, now));
    store.reserve(reserve(ORDERS, key("released"), released, now));
    store.reserve(reserve(ORDERS, key("held"), token(), now));
    store.reserve(reserve(ORDERS, key("lapsed"), token(), now));
    long taker = token();
    ReserveResult takeover =
        store.reserve(reserve(ORDERS, key("lapsed"), taker, now + Fixtures.LEASE));

    // when
    SettleResult commit = store.commit(commit(ORDERS, key("committed"), committed, now));
    SettleResult release = store.release(release(ORDERS, key("released"), released, now));
    store.close();

    // then: the state machine's answers, and on disk only the committed key with its index entry
    assertThat(takeover)
        .isEqualTo(
            new ReserveResult.Acquired(
                taker, now + 2 * Fixtures.LEASE, ReserveResult.Replaced.EXPIRED_LEASE));
    assertThat(commit).isEqualTo(SettleResult.APPLIED);
    assertThat(release).isEqualTo(SettleResult.APPLIED);
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isEqualTo(1);
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isEqualTo(1);
  }

  @Test
  void reservationsAreNotHandedToADatabaseRecreatedAtTheSamePathOrChangedMeanwhile()
      throws Exception {
    // given: a reservation held when its store closed, then the directory replaced by a new
    // database; and another one held when its store closed, then the database written by another
    // program before the reopen
    long now = clock.wallMillis();
    RocksDbDedupStore first = open();
    first.reserve(reserve(ORDERS, key("recreated"), token(), now));
    first.close();
    deleteRecursively(dir);
    RocksDbDedupStore second = open();
    second.reserve(reserve(ORDERS, key("changed"), token(), now));
    second.close();
    RawDb.put(
        dir, Handles.CF_DEFAULT, "someone else".getBytes(StandardCharsets.UTF_8), new byte[0]);

    // when
    RocksDbDedupStore third = open();

    // then: neither reservation comes back (nor does the first, through the second)
    assertThat(third.inspect(ORDERS, key("recreated"), now + 1)).isEqualTo(KeyState.ABSENT);
    assertThat(third.inspect(ORDERS, key("changed"), now + 1)).isEqualTo(KeyState.ABSENT);
  }

  private static void deleteRecursively(Path root) throws java.io.IOException {
    try (var paths = Files.walk(root)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  @Test
  void anInFlightEntryStoredByAnEarlierProcessReadsAsAbsentAndIsReplacedAtOnce() throws Exception {
    // given: an in-flight entry with a five-minute lease on disk, as a store that wrote
    // reservations left it at a crash (its holder died with that process)
    open().close();
    long now = clock.wallMillis();
    DedupKey orphan = key("orphan");
    long deadline = now + 300_000;
    ScopeKeys sk = new ScopeKeys(ORDERS);
    RawDb.put(
        dir,
        Handles.CF_ENTRIES,
        sk.entryKey(orphan),
        EntryCodec.encode(
            new dev.idem.spi.StoredEntry(
                dev.idem.spi.StoredEntry.State.IN_FLIGHT, 7, now, deadline, null, null)));
    RawDb.put(dir, Handles.CF_EXPIRY, sk.indexKey(deadline, orphan), new byte[0]);
    RocksDbDedupStore store = open();

    // when
    KeyState before = store.inspect(ORDERS, orphan, now + 1);
    long t = token();
    ReserveResult retry = store.reserve(reserve(ORDERS, orphan, t, now + 1));

    // then: no 409 for the rest of the dead holder's lease, and its token is fenced off
    assertThat(before).isEqualTo(KeyState.ABSENT);
    assertThat(retry)
        .isEqualTo(
            new ReserveResult.Acquired(
                t, now + 1 + Fixtures.LEASE, ReserveResult.Replaced.NOTHING));
    assertThat(store.commit(commit(ORDERS, orphan, 7, now + 2))).isEqualTo(SettleResult.STALE);
    assertThat(store.commit(commit(ORDERS, orphan, t, now + 2))).isEqualTo(SettleResult.APPLIED);
    // The orphan's index key (at its exact deadline, as that version wrote it) is left over until
    // the sweeper reaches it, which removes it and keeps the live commit and its own index key.
    assertThat(store.sweepExpired(deadline)).isZero();
    assertThat(store.inspect(ORDERS, orphan, deadline)).isInstanceOf(KeyState.Committed.class);
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isEqualTo(1);
  }

  @Test
  void aReservationOverAnExpiredKeyRemovesTheStoredEntryAndTheSweeperReportsOnlyTheLease()
      throws Exception {
    // given: a committed key whose one-second window has passed, not swept, reserved again
    List<String> heard = new CopyOnWriteArrayList<>();
    RocksDbDedupStore store =
        track(
            RocksDbDedupStore.builder(dir)
                .sweepInterval(Duration.ZERO)
                .timeSource(clock)
                .listener(recording(heard))
                .build());
    long now = clock.wallMillis();
    long first = token();
    store.reserve(reserve(ORDERS, key("k"), first, now));
    store.commit(commit(ORDERS, key("k"), first, now, new Ttl(1_000, dev.idem.Expiry.FIXED), null));
    long second = token();
    ReserveResult again = store.reserve(reserve(ORDERS, key("k"), second, now + 2_000));

    // when: the sweep runs past the old window and past the new lease
    long atOldWindow = store.sweepExpired(now + 2_000);
    long afterLease = store.sweepExpired(now + 2_000 + Fixtures.LEASE);

    // then
    assertThat(again)
        .isEqualTo(
            new ReserveResult.Acquired(
                second, now + 2_000 + Fixtures.LEASE, ReserveResult.Replaced.EXPIRED_KEY));
    assertThat(atOldWindow).isZero();
    assertThat(afterLease).isEqualTo(1);
    assertThat(heard).containsExactly("shop-orders/dedup " + key("k") + " lease");
    assertThat(store.commit(commit(ORDERS, key("k"), second, now + 3_000)))
        .isEqualTo(SettleResult.STALE);
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
  }

  @Test
  void clearRemovesOnlyItsScopeIncludingExpiryIndexEntries() throws Exception {
    // given: keys in two scopes, each with an expiry-index entry, one scope also with keys kept
    // forever (no index entry)
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    for (int i = 0; i < 20; i++) {
      for (Scope scope : List.of(ORDERS, REFUNDS)) {
        long t = token();
        store.reserve(reserve(scope, key("k" + i), t, now));
        store.commit(commit(scope, key("k" + i), t, now));
      }
    }
    long t = token();
    store.reserve(reserve(ORDERS, key("forever"), t, now, Ttl.NONE, null));
    store.commit(commit(ORDERS, key("forever"), t, now, Ttl.NONE, null));

    // when
    long cleared = store.clear(ORDERS);

    // then
    assertThat(cleared).isEqualTo(21);
    assertThat(store.inspect(ORDERS, key("k3"), now)).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(ORDERS, key("forever"), now)).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(REFUNDS, key("k3"), now)).isInstanceOf(KeyState.Committed.class);
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, REFUNDS)).isEqualTo(20);
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, REFUNDS)).isEqualTo(20);
  }

  @Test
  void clearCountsEveryEntryItRemovesDeadOrAliveAcrossBatches() throws Exception {
    // given: 1,500 keys (more than one clear batch): committed, expired, and in flight
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    Ttl second = new Ttl(1_000, dev.idem.Expiry.FIXED);
    List<ReserveRequest> reserves = new ArrayList<>();
    List<CommitRequest> commits = new ArrayList<>();
    for (int i = 0; i < 1_500; i++) {
      long t = token();
      reserves.add(reserve(ORDERS, key("c" + i), t, now));
      if (i % 3 != 0) {
        commits.add(commit(ORDERS, key("c" + i), t, now, i % 3 == 1 ? second : DAY_SLIDING, null));
      }
    }
    store.reserveAll(reserves);
    store.commitAll(commits);
    long t = token();
    store.reserve(reserve(REFUNDS, key("c1"), t, now));

    // when: a third of them have expired by now, and are not swept
    clock.advance(Duration.ofSeconds(2));
    long cleared = store.clear(ORDERS);

    // then
    assertThat(cleared).isEqualTo(1_500);
    assertThat(store.clear(ORDERS)).isZero();
    assertThat(store.inspect(REFUNDS, key("c1"), now)).isInstanceOf(KeyState.InFlight.class);
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
    // The reservation in REFUNDS is in memory only: nothing of it is on disk.
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, REFUNDS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, REFUNDS)).isZero();
  }

  @Test
  void clearDoesNotTouchAScopeWhoseNameExtendsTheClearedOne() {
    // given: "a/dedup" and "a/dedupe" differ only by a trailing character
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    Scope shorter = Scope.of("a", "dedup");
    Scope longer = Scope.of("a", "dedupe");
    for (Scope scope : List.of(shorter, longer)) {
      long t = token();
      store.reserve(reserve(scope, key("x"), t, now));
      store.commit(commit(scope, key("x"), t, now));
    }

    // when
    store.clear(shorter);

    // then
    assertThat(store.inspect(shorter, key("x"), now)).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(longer, key("x"), now)).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void secondOpenOfALockedDirectoryFailsNamingTheDirectoryAndTheFix() {
    // given
    open();

    // when / then
    assertThatThrownBy(() -> RocksDbDedupStore.builder(dir).build())
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(dir.toAbsolutePath().toString())
        .hasMessageContaining("already open")
        .hasMessageContaining("Close the other store");
  }

  @Test
  void aClosedDirectoryCanBeOpenedAgain() {
    // given
    RocksDbDedupStore first = open();
    first.close();

    // when
    RocksDbDedupStore second = open();

    // then
    assertThat(second.describe()).isEqualTo("rocksdb:" + dir.toAbsolutePath().normalize());
  }

  @ParameterizedTest(name = "groupCommitMaxDelay {0} µs")
  @ValueSource(longs = {0, 1_000})
  void manyConcurrentWritersUnderGroupCommitAreAllDurable(long maxDelayMicros) throws Exception {
    // given: 16 writers, each reserving and committing its own keys at the same time
    RocksDbDedupStore store =
        track(
            RocksDbDedupStore.builder(dir)
                .groupCommitMaxDelay(Duration.ofNanos(maxDelayMicros * 1_000))
                .sweepInterval(Duration.ZERO)
                .timeSource(clock)
                .build());
    int writers = 16;
    int perWriter = 100;
    long now = clock.wallMillis();
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Integer>> applied = new ArrayList<>();
    try {
      for (int w = 0; w < writers; w++) {
        int writer = w;
        applied.add(
            pool.submit(
                () -> {
                  start.await();
                  int ok = 0;
                  for (int i = 0; i < perWriter; i++) {
                    DedupKey k = key(writer + ":" + i);
                    long t = token();
                    store.reserve(reserve(ORDERS, k, t, now));
                    if (store.commit(commit(ORDERS, k, t, now)) == SettleResult.APPLIED) {
                      ok++;
                    }
                  }
                  return ok;
                }));
      }
      start.countDown();
      for (Future<Integer> f : applied) {
        assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(perWriter);
      }
    } finally {
      pool.shutdownNow();
    }

    // when
    RocksDbDedupStore reopened = reopen(store);

    // then
    for (int w = 0; w < writers; w++) {
      for (int i = 0; i < perWriter; i++) {
        assertThat(reopened.inspect(ORDERS, key(w + ":" + i), now))
            .as("key %d:%d", w, i)
            .isInstanceOf(KeyState.Committed.class);
      }
    }
  }

  @Test
  void manyThreadsOnOneKeyAcquireItExactlyOnce() throws Exception {
    // given
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<ReserveResult>> results = new ArrayList<>();
    try {
      for (int i = 0; i < threads; i++) {
        results.add(
            pool.submit(
                () -> {
                  start.await();
                  return store.reserve(reserve(ORDERS, key("hot"), token(), now));
                }));
      }
      start.countDown();

      // then
      int acquired = 0;
      for (Future<ReserveResult> f : results) {
        if (f.get(30, TimeUnit.SECONDS) instanceof ReserveResult.Acquired) {
          acquired++;
        }
      }
      assertThat(acquired).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void reserveAllDecidesARepeatedKeyInRequestOrderAndCommitAllAppliesEach() {
    // given
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    long t1 = token();
    long t2 = token();
    long t3 = token();
    List<ReserveRequest> requests =
        List.of(
            reserve(ORDERS, key("a"), t1, now),
            reserve(ORDERS, key("b"), t2, now),
            reserve(ORDERS, key("a"), t3, now));

    // when
    List<ReserveResult> reserved = store.reserveAll(requests);
    List<SettleResult> committed =
        store.commitAll(
            List.of(
                commit(ORDERS, key("a"), t1, now),
                commit(ORDERS, key("b"), t2, now),
                commit(ORDERS, key("a"), t3, now)));

    // then
    assertThat(reserved.get(0)).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(reserved.get(1)).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(reserved.get(2)).isEqualTo(new ReserveResult.InFlight(now + Fixtures.LEASE));
    assertThat(committed)
        .containsExactly(SettleResult.APPLIED, SettleResult.APPLIED, SettleResult.STALE);
    assertThat(
            store.releaseAll(
                List.of(release(ORDERS, key("a"), t1, now), release(ORDERS, key("b"), t2, now))))
        .containsExactly(SettleResult.STALE, SettleResult.STALE);
  }

  @Test
  void sweepRemovesExpiredKeysAndLapsedLeasesAndReportsEach() throws Exception {
    // given: a committed key with a 1 s window, a reservation whose lease lapses, a key kept
    // forever
    List<String> heard = new CopyOnWriteArrayList<>();
    RocksDbDedupStore store =
        track(
            RocksDbDedupStore.builder(dir)
                .sweepInterval(Duration.ZERO)
                .timeSource(clock)
                .listener(recording(heard))
                .build());
    long now = clock.wallMillis();
    long t = token();
    store.reserve(reserve(ORDERS, key("short"), t, now));
    store.commit(commit(ORDERS, key("short"), t, now, new Ttl(1_000, dev.idem.Expiry.FIXED), null));
    store.reserve(reserve(ORDERS, key("crashed"), token(), now));
    long f = token();
    store.reserve(reserve(REFUNDS, key("forever"), f, now));
    store.commit(commit(REFUNDS, key("forever"), f, now, Ttl.NONE, null));

    // when: time passes beyond the lease, but not yet for an early sweep
    long early = store.sweepExpired(now + 999);
    long swept = store.sweepExpired(now + Fixtures.LEASE);

    // then
    assertThat(early).isZero();
    assertThat(swept).isEqualTo(2);
    assertThat(heard)
        .containsExactlyInAnyOrder(
            "shop-orders/dedup " + key("short") + " ttl",
            "shop-orders/dedup " + key("crashed") + " lease");
    assertThat(store.sweepExpired(Long.MAX_VALUE - 1)).isZero();
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_ENTRIES, REFUNDS)).isEqualTo(1);
  }

  @Test
  void sweepWorksThroughManyBatchesAndScopes() {
    // given: more expired keys than one sweep batch, spread over scopes, with live keys between
    RocksDbDedupStore store =
        track(
            RocksDbDedupStore.builder(dir)
                .sweepInterval(Duration.ZERO)
                .sweepBatchSize(7)
                .timeSource(clock)
                .build());
    long now = clock.wallMillis();
    Ttl second = new Ttl(1_000, dev.idem.Expiry.FIXED);
    for (int s = 0; s < 3; s++) {
      Scope scope = Scope.of("p" + s);
      for (int i = 0; i < 25; i++) {
        long t = token();
        store.reserve(reserve(scope, key(s + "/" + i), t, now));
        store.commit(
            commit(scope, key(s + "/" + i), t, now, i % 5 == 0 ? DAY_FIXED : second, null));
      }
    }

    // when
    long swept = store.sweepExpired(now + 1_000);

    // then: 20 of every 25 had the short window
    assertThat(swept).isEqualTo(60);
    assertThat(store.inspect(Scope.of("p1"), key("1/5"), now + 1_000))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void backgroundSweeperJudgesExpiryByTheConfiguredTimeSource() {
    // given: a sweeper every 20 ms driven by a manual clock
    List<String> heard = new CopyOnWriteArrayList<>();
    RocksDbDedupStore store =
        track(
            RocksDbDedupStore.builder(dir)
                .sweepInterval(Duration.ofMillis(20))
                .timeSource(clock)
                .listener(recording(heard))
                .build());
    long now = clock.wallMillis();
    long t = token();
    store.reserve(reserve(ORDERS, key("k"), t, now));
    store.commit(commit(ORDERS, key("k"), t, now, new Ttl(60_000, dev.idem.Expiry.FIXED), null));

    // when: the manual clock has not moved, the sweeper must leave the key alone
    await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(heard::isEmpty);
    clock.advance(Duration.ofMinutes(1));

    // then
    await().atMost(Duration.ofSeconds(10)).until(() -> heard.size() == 1);
    assertThat(heard).containsExactly("shop-orders/dedup " + key("k") + " ttl");
  }

  @Test
  void everyMethodFailsAfterCloseAndCloseIsIdempotent() {
    // given
    RocksDbDedupStore store = open();
    store.close();

    // when / then
    store.close();
    assertThatThrownBy(() -> store.reserve(reserve(ORDERS, key("k"), token(), 1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(() -> store.inspect(ORDERS, key("k"), 1))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> store.depth("q")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> store.claim("q", 1, 1, 1)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(store::checkHealth).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(store::compact).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void checkHealthPassesOnAnOpenStore() {
    RocksDbDedupStore store = open();

    store.checkHealth();

    assertThat(store.capabilities().durable()).isTrue();
    assertThat(store.capabilities().outbox()).isTrue();
    assertThat(store.capabilities().nativeExpiry()).isFalse();
  }

  @Test
  void forgetRemovesAnyStateAndFencesTheHolder() {
    // given
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    long t = token();
    store.reserve(reserve(ORDERS, key("k"), t, now));

    // when
    boolean forgotten = store.forget(ORDERS, key("k"));

    // then
    assertThat(forgotten).isTrue();
    assertThat(store.forget(ORDERS, key("k"))).isFalse();
    assertThat(store.commit(commit(ORDERS, key("k"), t, now))).isEqualTo(SettleResult.STALE);
    assertThat(store.reserve(reserve(ORDERS, key("k"), token(), now)))
        .isInstanceOf(ReserveResult.Acquired.class);
  }

  @Test
  void forgetOfAnExpiredEntryNotYetSweptAnswersTrueAndRemovesItsIndexEntry() throws Exception {
    // given: a committed key whose one-second window has passed, not swept
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    long t = token();
    store.reserve(reserve(ORDERS, key("k"), t, now));
    store.commit(commit(ORDERS, key("k"), t, now, new Ttl(1_000, dev.idem.Expiry.FIXED), null));
    clock.advance(Duration.ofSeconds(5));

    // when
    boolean forgotten = store.forget(ORDERS, key("k"));

    // then
    assertThat(forgotten).isTrue();
    assertThat(store.forget(ORDERS, key("k"))).isFalse();
    store.close();
    assertThat(RawDb.countScopeKeys(dir, Handles.CF_EXPIRY, ORDERS)).isZero();
  }

  @Test
  void aValueInAnUnknownFormatIsAStoreExceptionNamingTheKey() throws Exception {
    // given: a value of format version 9 under an entry key
    open().close();
    RawDb.put(dir, Handles.CF_ENTRIES, new ScopeKeys(ORDERS).entryKey(key("k")), new byte[] {9, 0});
    RocksDbDedupStore store = open();

    // when / then
    assertThatThrownBy(() -> store.reserve(reserve(ORDERS, key("k"), token(), clock.wallMillis())))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(key("k").toHex())
        .hasMessageContaining("format version 9");
  }

  @Test
  void aDirectoryOfANewerFormatIsRefused() throws Exception {
    // given
    open().close();
    RawDb.put(dir, Handles.CF_DEFAULT, Handles.META_FORMAT, new byte[] {2});

    // when / then
    assertThatThrownBy(this::open)
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("format 2")
        .hasMessageContaining("reads format 1");
  }

  @Test
  void aForeignRocksDbDirectoryIsRefused() throws Exception {
    // given: another program's RocksDB database with its own column family
    try (org.rocksdb.Options options = new org.rocksdb.Options().setCreateIfMissing(true);
        org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, dir.toString())) {
      db.createColumnFamily(new org.rocksdb.ColumnFamilyDescriptor("users".getBytes())).close();
    }

    // when / then
    assertThatThrownBy(this::open)
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("not an Idem store")
        .hasMessageContaining("users");
  }

  @Test
  void aPlainRocksDbDirectoryWithDataIsRefused() throws Exception {
    // given
    try (org.rocksdb.Options options = new org.rocksdb.Options().setCreateIfMissing(true);
        org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, dir.toString())) {
      db.put("user:1".getBytes(), "alice".getBytes());
    }

    // when / then
    assertThatThrownBy(this::open)
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("format marker");
  }

  @Test
  void aFileInPlaceOfTheDirectoryIsAStoreException() throws Exception {
    Path file = Files.writeString(dir.resolve("not-a-dir"), "x");

    assertThatThrownBy(() -> RocksDbDedupStore.builder(file).build())
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(file.toString());
  }

  @Test
  void settingsAreValidatedWithMessagesNamingTheField() {
    assertThatThrownBy(
            () -> RocksDbDedupStore.builder(dir).sweepInterval(Duration.ofMillis(1)).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("sweepInterval");
    assertThatThrownBy(
            () -> RocksDbDedupStore.builder(dir).groupCommitMaxDelay(Duration.ofSeconds(2)).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("groupCommitMaxDelay");
    assertThatThrownBy(() -> RocksDbDedupStore.builder(dir).sweepBatchSize(0).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("sweepBatchSize");
    assertThatThrownBy(() -> RocksDbDedupStore.builder(dir).blockCacheBytes(1024).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("blockCacheBytes");
    assertThatThrownBy(() -> RocksDbDedupStore.builder(null).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("directory");
    assertThatThrownBy(() -> RocksDbDedupStore.builder(dir).durability(null).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("durability");
    assertThat(RocksDbStoreConfig.ofDefaults(dir).durability()).isEqualTo(Durability.GROUP_COMMIT);
  }

  @Test
  void aRetriedCommitOfAnAlreadyCommittedKeyIsAppliedWithoutChange() {
    // given
    RocksDbDedupStore store = open();
    long now = clock.wallMillis();
    long t = token();
    store.reserve(reserve(ORDERS, key("k"), t, now));
    CommitRequest first = commit(ORDERS, key("k"), t, now, DAY_SLIDING, new byte[] {1});
    store.commit(first);

    // when
    SettleResult again =
        store.commit(commit(ORDERS, key("k"), t, now + 5, DAY_SLIDING, new byte[] {2}));

    // then
    assertThat(again).isEqualTo(SettleResult.APPLIED);
    assertThat(store.inspect(ORDERS, key("k"), now + 5))
        .isInstanceOfSatisfying(
            KeyState.Committed.class, c -> assertThat(c.result()).containsExactly(1));
  }

  private static DedupListener recording(List<String> heard) {
    return new DedupListener() {
      @Override
      public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
        heard.add(scope + " " + key + (leaseExpired ? " lease" : " ttl"));
      }
    };
  }
}
