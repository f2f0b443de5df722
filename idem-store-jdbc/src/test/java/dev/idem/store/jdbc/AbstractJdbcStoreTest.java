package dev.idem.store.jdbc;

import static dev.idem.store.jdbc.TestDb.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the JDBC store guarantees beyond the shared contract suite, run against each database by a
 * subclass: single-statement reserve under a storm, the schema's life, the transactional outbox and
 * its {@code SKIP LOCKED} claim, sweeping, and the answers of every operation against the reference
 * state machine under a seeded random workload.
 */
abstract class AbstractJdbcStoreTest {
  static final Scope SCOPE = Scope.of("orders");
  static final long LEASE = 30_000;
  static final Ttl TTL = new Ttl(60_000, Expiry.SLIDING);
  static final String QUEUE = "orders-out";

  final ManualTimeSource clock = new ManualTimeSource();
  String url;
  String prefix;
  private final List<JdbcDedupStore> opened = new ArrayList<>();
  private final List<String> prefixes = new ArrayList<>();

  /** The database this subclass runs on. */
  abstract TestDb db();

  @BeforeEach
  void pickStorage() {
    url = db().url();
    prefix = newPrefix();
  }

  @AfterEach
  void dropStorage() throws SQLException {
    for (JdbcDedupStore s : opened) {
      s.close();
    }
    for (String p : prefixes) {
      TestDb.dropTables(url, p);
    }
  }

  String newPrefix() {
    String p = TestDb.uniquePrefix();
    prefixes.add(p);
    return p;
  }

  JdbcDedupStore open() {
    return open(b -> b);
  }

  JdbcDedupStore open(UnaryOperator<JdbcDedupStore.Builder> tweak) {
    JdbcDedupStore s =
        tweak
            .apply(
                JdbcDedupStore.builder(url)
                    .tablePrefix(prefix)
                    .timeSource(clock)
                    .sweepInterval(Duration.ZERO)
                    .poolSize(12))
            .build();
    opened.add(s);
    return s;
  }

  long now() {
    return clock.wallMillis();
  }

  ReserveRequest reserveReq(DedupKey k, long token) {
    return new ReserveRequest(SCOPE, k, null, token, now(), LEASE, TTL);
  }

  CommitRequest commitReq(DedupKey k, long token) {
    return new CommitRequest(SCOPE, k, token, now(), TTL, null);
  }

  long count(String table) throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + prefix + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  void execute(String sql) throws SQLException {
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  // ---- reserve: one atomic step
  // ------------------------------------------------------------------

  @Test
  void concurrentReservesOfANewKeyAcquireItExactlyOnce() throws Exception {
    // Given a store and 12 threads that start each round together
    JdbcDedupStore store = open();
    int threads = 12;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 15; round++) {
        DedupKey k = key("storm-" + round);
        // When all of them reserve the same new key at once
        List<ReserveResult> results = storm(pool, threads, t -> store.reserve(reserveReq(k, t)));

        // Then exactly one acquired it and every other one was told it is in flight
        assertThat(results).filteredOn(r -> r instanceof ReserveResult.Acquired).hasSize(1);
        assertThat(results)
            .filteredOn(r -> !(r instanceof ReserveResult.Acquired))
            .allSatisfy(r -> assertThat(r).isEqualTo(new ReserveResult.InFlight(now() + LEASE)))
            .hasSize(threads - 1);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void concurrentReservesOfAnExpiredLeaseTakeItOverExactlyOnce() throws Exception {
    // Given a key whose holder crashed: its lease ran out
    JdbcDedupStore store = open();
    int threads = 12;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 10; round++) {
        DedupKey k = key("takeover-" + round);
        assertThat(store.reserve(reserveReq(k, 999_999)))
            .isInstanceOf(ReserveResult.Acquired.class);
        clock.advanceMillis(LEASE);

        // When many threads reserve it at once
        List<ReserveResult> results = storm(pool, threads, t -> store.reserve(reserveReq(k, t)));

        // Then one took it over, saying so, and the others see the new holder
        assertThat(results)
            .filteredOn(r -> r instanceof ReserveResult.Acquired)
            .singleElement()
            .satisfies(
                r ->
                    assertThat(((ReserveResult.Acquired) r).replaced())
                        .isEqualTo(ReserveResult.Replaced.EXPIRED_LEASE));
        assertThat(results)
            .filteredOn(r -> r instanceof ReserveResult.InFlight)
            .hasSize(threads - 1);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void concurrentDuplicatesOfACommittedKeyAllReadAsDuplicates() throws Exception {
    // Given a committed key
    JdbcDedupStore store = open();
    DedupKey k = key("dup-storm");
    store.reserve(reserveReq(k, 1));
    assertThat(store.commit(commitReq(k, 1))).isEqualTo(SettleResult.APPLIED);
    long committedAt = now();
    clock.advanceMillis(1_000);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      // When many resends arrive at once
      List<ReserveResult> results = storm(pool, 8, t -> store.reserve(reserveReq(k, t + 10)));

      // Then all are duplicates and the sliding window restarted from now
      assertThat(results)
          .allSatisfy(
              r -> {
                assertThat(r).isInstanceOf(ReserveResult.Duplicate.class);
                ReserveResult.Duplicate d = (ReserveResult.Duplicate) r;
                assertThat(d.committedAtMillis()).isEqualTo(committedAt);
                assertThat(d.expiresAtMillis()).isEqualTo(now() + TTL.millis());
              });
    } finally {
      pool.shutdownNow();
    }
  }

  private static List<ReserveResult> storm(
      ExecutorService pool, int threads, ThrowingFunction<ReserveResult> work) throws Exception {
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Future<ReserveResult>> futures = new ArrayList<>();
    for (int t = 1; t <= threads; t++) {
      long token = t;
      futures.add(
          pool.submit(
              () -> {
                start.await(30, TimeUnit.SECONDS);
                return work.apply(token);
              }));
    }
    List<ReserveResult> out = new ArrayList<>();
    for (Future<ReserveResult> f : futures) {
      out.add(f.get(60, TimeUnit.SECONDS));
    }
    return out;
  }

  @FunctionalInterface
  interface ThrowingFunction<T> {
    T apply(long token) throws Exception;
  }

  @Test
  void theReferenceStateMachineAndTheStoreAgreeOnARandomWorkload() {
    // Given a store and the reference model, fed the same seeded random operations
    for (long seed = 1; seed <= 3; seed++) {
      JdbcDedupStore store = open(b -> b.tablePrefix(newPrefix()));
      // When each operation runs on both, then every answer is the same (ModelCheck asserts)
      new ModelCheck(store, seed).run(220);
    }
  }

  @Test
  void reserveAllAnswersAsReservingOneByOneWould() {
    // Given a committed key and an in-flight one
    JdbcDedupStore store = open();
    DedupKey committed = key("b-committed");
    DedupKey held = key("b-held");
    store.reserve(reserveReq(committed, 1));
    store.commit(commitReq(committed, 1));
    store.reserve(reserveReq(held, 2));

    // When a batch holds two new keys, a new key twice, and both old keys
    DedupKey a = key("b-a");
    DedupKey b = key("b-b");
    List<ReserveResult> results =
        store.reserveAll(
            List.of(
                reserveReq(b, 10),
                reserveReq(a, 11),
                reserveReq(committed, 12),
                reserveReq(b, 13),
                reserveReq(held, 14)));

    // Then each answer is the one reserve would give, in request order
    assertThat(results)
        .containsExactly(
            new ReserveResult.Acquired(10, now() + LEASE, ReserveResult.Replaced.NOTHING),
            new ReserveResult.Acquired(11, now() + LEASE, ReserveResult.Replaced.NOTHING),
            new ReserveResult.Duplicate(now(), now() + TTL.millis(), null),
            new ReserveResult.InFlight(now() + LEASE),
            new ReserveResult.InFlight(now() + LEASE));
    assertThat(store.commitAll(List.of(commitReq(b, 10), commitReq(a, 99), commitReq(held, 2))))
        .containsExactly(SettleResult.APPLIED, SettleResult.STALE, SettleResult.APPLIED);
    assertThat(
            store.releaseAll(
                List.of(
                    new ReleaseRequest(SCOPE, a, 11, now()),
                    new ReleaseRequest(SCOPE, a, 11, now()))))
        .containsExactly(SettleResult.APPLIED, SettleResult.STALE);
  }

  @Test
  void aLargeResultIsReplayedByteForByte() {
    // Given a commit that stores a 1 MiB result
    JdbcDedupStore store = open();
    DedupKey k = key("big");
    byte[] result = new byte[1 << 20];
    new java.util.Random(7).nextBytes(result);
    store.reserve(reserveReq(k, 1));
    store.commit(new CommitRequest(SCOPE, k, 1, now(), TTL, result));

    // When a duplicate arrives, then it carries the same bytes
    ReserveResult r = store.reserve(reserveReq(k, 2));
    assertThat(r).isInstanceOf(ReserveResult.Duplicate.class);
    assertThat(((ReserveResult.Duplicate) r).result()).isEqualTo(result);
  }

  // ---- schema -----------------------------------------------------------------------------------

  @Test
  void theSchemaIsCreatedOnceAndReusedByTheNextStore() throws SQLException {
    // Given a store that committed a key, then closed
    JdbcDedupStore first = open();
    DedupKey k = key("kept");
    first.reserve(reserveReq(k, 1));
    first.commit(commitReq(k, 1));
    first.close();

    // When another store opens on the same tables
    JdbcDedupStore second = open();

    // Then it finds the key, and the schema was written once, at version 1
    assertThat(second.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(count("schema_version")).isEqualTo(1);
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT version FROM " + prefix + "schema_version")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getInt(1)).isEqualTo(1);
    }
  }

  @Test
  void storesOpenedAtOnceOnNewTablesAllStart() throws Exception {
    // Given four instances starting together on tables nobody created yet
    int n = 4;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    CyclicBarrier start = new CyclicBarrier(n);
    try {
      List<Future<JdbcDedupStore>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        futures.add(
            pool.submit(
                () -> {
                  start.await(30, TimeUnit.SECONDS);
                  return JdbcDedupStore.builder(url)
                      .tablePrefix(prefix)
                      .sweepInterval(Duration.ZERO)
                      .poolSize(2)
                      .build();
                }));
      }
      // When they all create the schema, then every one starts and they share one key space
      List<JdbcDedupStore> stores = new ArrayList<>();
      for (Future<JdbcDedupStore> f : futures) {
        stores.add(f.get(60, TimeUnit.SECONDS));
      }
      opened.addAll(stores);
      DedupKey k = key("shared");
      assertThat(stores.get(0).reserve(reserveReq(k, 1)))
          .isInstanceOf(ReserveResult.Acquired.class);
      assertThat(stores.get(3).reserve(reserveReq(k, 2)))
          .isInstanceOf(ReserveResult.InFlight.class);
      assertThat(count("schema_version")).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void withoutSchemaCreationMissingTablesAreAnErrorThatSaysWhatToDo() {
    // Given no tables, when a store is built with createSchema(false)
    assertThatThrownBy(() -> open(b -> b.createSchema(false)))
        // Then it fails naming the table and both ways out
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(prefix + "schema_version")
        .hasMessageContaining("createSchema(true)")
        .hasMessageContaining("docs/stores/jdbc.md");
  }

  @Test
  void tablesCreatedFromTheDocumentedDdlAreAccepted() throws SQLException {
    // Given tables an operator created from the published DDL
    try (Connection c = TestDb.connect(url);
        Statement st = c.createStatement()) {
      for (String ddl : JdbcDedupStore.schemaDdl(open().dialect(), prefix)) {
        st.execute(ddl);
      }
    }

    // When a store opens them without creating anything, then it works on them
    JdbcDedupStore store = open(b -> b.createSchema(false));
    DedupKey k = key("ddl");
    assertThat(store.reserve(reserveReq(k, 1))).isInstanceOf(ReserveResult.Acquired.class);
  }

  @Test
  void aNewerSchemaVersionIsRefused() throws SQLException {
    // Given tables that a newer Idem migrated to version 2
    open().close();
    execute("UPDATE " + prefix + "schema_version SET version = 2");

    // When this Idem opens them, then it refuses rather than misread them
    assertThatThrownBy(this::open)
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("schema version 2")
        .hasMessageContaining("newer");
  }

  // ---- outbox -----------------------------------------------------------------------------------

  OutboxMessage message(DedupKey k, String body) {
    return new OutboxMessage(QUEUE, k, body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void commitAndEnqueueWritesTheMarkAndTheMessageTogether() throws SQLException {
    // Given a reservation
    JdbcDedupStore store = open();
    DedupKey k = key("hook-1");
    store.reserve(reserveReq(k, 1));

    // When it is committed with a message
    assertThat(store.commitAndEnqueue(commitReq(k, 1), message(k, "payload")))
        .isEqualTo(SettleResult.APPLIED);

    // Then the key is committed and the message waits in the outbox
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.Committed.class);
    assertThat(store.depth(QUEUE)).isEqualTo(1);
    List<OutboxRecord> claimed = store.claim(QUEUE, 10, now(), 60_000);
    assertThat(claimed)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.key()).isEqualTo(k);
              assertThat(new String(r.payload(), StandardCharsets.UTF_8)).isEqualTo("payload");
              assertThat(r.attempts()).isEqualTo(1);
              assertThat(r.enqueuedAtMillis()).isEqualTo(now());
              assertThat(r.lastError()).isNull();
            });

    // And a retried commitAndEnqueue (first outcome unknown) applies without a second message
    assertThat(store.commitAndEnqueue(commitReq(k, 1), message(k, "payload")))
        .isEqualTo(SettleResult.APPLIED);
    assertThat(store.depth(QUEUE)).isEqualTo(1);
  }

  @Test
  void aStaleCommitEnqueuesNothing() {
    // Given a reservation whose lease ran out and was taken over
    JdbcDedupStore store = open();
    DedupKey k = key("hook-stale");
    store.reserve(reserveReq(k, 1));
    clock.advanceMillis(LEASE);
    store.reserve(reserveReq(k, 2));

    // When the first holder commits with a message
    SettleResult r = store.commitAndEnqueue(commitReq(k, 1), message(k, "late"));

    // Then nothing is committed for it and nothing is enqueued
    assertThat(r).isEqualTo(SettleResult.STALE);
    assertThat(store.depth(QUEUE)).isZero();
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.InFlight.class);
  }

  @Test
  void aFailureBetweenTheCommitAndTheAppendRollsBothBack() throws SQLException {
    // Given a reservation, and an outbox table that is not there when the append runs (renamed
    // away: the commit's UPDATE succeeds, then the INSERT fails inside the same transaction)
    JdbcDedupStore store = open();
    DedupKey k = key("hook-fail");
    store.reserve(reserveReq(k, 1));
    execute("ALTER TABLE " + prefix + "outbox RENAME TO " + prefix + "outbox_away");

    // When the commit and append run
    assertThatThrownBy(() -> store.commitAndEnqueue(commitReq(k, 1), message(k, "lost?")))
        .isInstanceOf(StoreException.class)
        .satisfies(e -> assertThat(e.getMessage()).containsIgnoringCase(prefix + "outbox"));

    // Then the commit was rolled back with it: the key is still in flight, not committed
    assertThat(store.inspect(SCOPE, k, now())).isInstanceOf(KeyState.InFlight.class);

    // And once the table is back, the same commit goes through with its message
    execute("ALTER TABLE " + prefix + "outbox_away RENAME TO " + prefix + "outbox");
    assertThat(store.commitAndEnqueue(commitReq(k, 1), message(k, "found")))
        .isEqualTo(SettleResult.APPLIED);
    assertThat(store.depth(QUEUE)).isEqualTo(1);
  }

  private JdbcDedupStore storeWithMessages(int n) {
    JdbcDedupStore store = open();
    for (int i = 0; i < n; i++) {
      DedupKey k = key("msg-" + i);
      store.reserve(reserveReq(k, i + 1));
      assertThat(store.commitAndEnqueue(commitReq(k, i + 1), message(k, "m" + i)))
          .isEqualTo(SettleResult.APPLIED);
    }
    return store;
  }

  @Test
  void aClaimSkipsEntriesAnotherTransactionHoldsInsteadOfWaiting() throws Exception {
    // Given three messages, the oldest row-locked by another transaction (a claimer mid-claim)
    JdbcDedupStore store = storeWithMessages(3);
    String limitOne = db() == TestDb.H2 ? "FETCH FIRST 1 ROWS ONLY" : "LIMIT 1";
    try (Connection holder = TestDb.connect(url)) {
      holder.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      holder.setAutoCommit(false);
      long lockedId;
      try (Statement st = holder.createStatement();
          ResultSet rs =
              st.executeQuery(
                  "SELECT id FROM " + prefix + "outbox ORDER BY id " + limitOne + " FOR UPDATE")) {
        assertThat(rs.next()).isTrue();
        lockedId = rs.getLong(1);
      }

      // When the store claims (in another thread, so that a wait would show as a timeout)
      List<OutboxRecord> claimed =
          CompletableFuture.supplyAsync(() -> store.claim(QUEUE, 10, now(), 60_000))
              .get(30, TimeUnit.SECONDS);

      // Then it got the two other entries, oldest first, without waiting for the lock
      assertThat(claimed).hasSize(2).extracting(OutboxRecord::id).doesNotContain(lockedId);
      assertThat(claimed).extracting(OutboxRecord::id).isSorted();
      holder.rollback();
    }

    // And the entry is claimable once the other transaction is gone
    assertThat(store.claim(QUEUE, 10, now(), 60_000)).hasSize(1);
  }

  @Test
  void concurrentClaimersNeverGetTheSameEntry() throws Exception {
    // Given 60 messages and four deliverers claiming small batches at once
    JdbcDedupStore store = storeWithMessages(60);
    int claimers = 4;
    ExecutorService pool = Executors.newFixedThreadPool(claimers);
    CyclicBarrier start = new CyclicBarrier(claimers);
    List<Long> all = new CopyOnWriteArrayList<>();
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int i = 0; i < claimers; i++) {
        futures.add(
            pool.submit(
                () -> {
                  start.await(30, TimeUnit.SECONDS);
                  List<OutboxRecord> got;
                  while (!(got = store.claim(QUEUE, 3, now(), 600_000)).isEmpty()) {
                    got.forEach(r -> all.add(r.id()));
                  }
                  return null;
                }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    // Then every entry was handed out exactly once
    assertThat(all).hasSize(60).doesNotHaveDuplicates();
  }

  @Test
  void theOutboxLifecycleClaimRescheduleAcknowledgeAndDeadLetter() {
    // Given three messages
    JdbcDedupStore store = storeWithMessages(3);
    List<OutboxRecord> first = store.claim(QUEUE, 2, now(), 10_000);
    assertThat(first).hasSize(2).extracting(OutboxRecord::attempts).containsOnly(1);

    // A claim hides its entries until it runs out; other queues never see them
    assertThat(store.claim(QUEUE, 10, now(), 10_000)).hasSize(1);
    assertThat(store.claim(QUEUE, 10, now(), 10_000)).isEmpty();
    assertThat(store.claim("other-queue", 10, now(), 10_000)).isEmpty();
    assertThat(store.depth("other-queue")).isZero();

    // A failed delivery is rescheduled with its error and comes back after notBefore
    OutboxRecord failed = first.get(0);
    store.reschedule(QUEUE, failed.id(), now() + 5_000, "HTTP 503");
    clock.advanceMillis(4_999);
    assertThat(store.claim(QUEUE, 10, now(), 10_000)).isEmpty();
    clock.advanceMillis(1);
    assertThat(store.claim(QUEUE, 10, now(), 10_000))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.id()).isEqualTo(failed.id());
              assertThat(r.attempts()).isEqualTo(2);
              assertThat(r.lastError()).isEqualTo("HTTP 503");
            });

    // A delivered entry is acknowledged once
    OutboxRecord delivered = first.get(1);
    assertThat(store.acknowledge(QUEUE, delivered.id())).isTrue();
    assertThat(store.acknowledge(QUEUE, delivered.id())).isFalse();
    assertThat(store.depth(QUEUE)).isEqualTo(2);

    // An expired claim hands the entry out again (its deliverer crashed)
    clock.advanceMillis(10_000);
    List<OutboxRecord> again = store.claim(QUEUE, 10, now(), 10_000);
    assertThat(again).hasSize(2).extracting(OutboxRecord::id).isSorted();

    // A given-up entry moves to the dead letters, once
    store.deadLetter(QUEUE, failed.id(), "gave up after 2 attempts", now());
    store.deadLetter(QUEUE, failed.id(), "again", now());
    assertThat(store.depth(QUEUE)).isEqualTo(1);
    assertThat(store.deadLetters(QUEUE, 10))
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.id()).isEqualTo(failed.id());
              assertThat(d.key()).isEqualTo(failed.key());
              assertThat(d.payload()).isEqualTo(failed.payload());
              assertThat(d.attempts()).isEqualTo(3);
              assertThat(d.enqueuedAtMillis()).isEqualTo(failed.enqueuedAtMillis());
              assertThat(d.deadAtMillis()).isEqualTo(now());
              assertThat(d.reason()).isEqualTo("gave up after 2 attempts");
            });
    assertThat(store.deadLetters("other-queue", 10)).isEmpty();
  }

  // ---- releasing the claims of an earlier life
  // ----------------------------------------------------

  private List<DedupKey> enqueueMessages(JdbcDedupStore store, String tag, int n) {
    List<DedupKey> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      DedupKey k = key(tag + "-" + i);
      store.reserve(reserveReq(k, i + 1));
      assertThat(store.commitAndEnqueue(commitReq(k, i + 1), message(k, tag + i)))
          .isEqualTo(SettleResult.APPLIED);
      keys.add(k);
    }
    return keys;
  }

  @Test
  void aNewLifeOfAnInstanceReleasesItsEarlierClaimsButKeepsScheduledRetries() {
    // Given life 1 of instance "a" claimed three entries and rescheduled one of them for later
    JdbcDedupStore life1 = open(b -> b.instanceId("a"));
    List<DedupKey> keys = enqueueMessages(life1, "life", 4);
    List<OutboxRecord> claimed = life1.claim(QUEUE, 3, now(), 600_000);
    assertThat(claimed).hasSize(3);
    life1.reschedule(QUEUE, claimed.get(2).id(), now() + 5_000, "HTTP 503");

    // When life 2 of the same instance (same id, same tables) starts
    JdbcDedupStore life2 = open(b -> b.instanceId("a"));
    assertThat(life2.releaseClaimsOfEarlierRuns(QUEUE)).isEqualTo(2);

    // Then the claimed entries come back at once, the unclaimed one too; the retry keeps its time
    List<OutboxRecord> now = life2.claim(QUEUE, 10, now(), 600_000);
    assertThat(now)
        .extracting(OutboxRecord::key)
        .containsExactly(keys.get(0), keys.get(1), keys.get(3));
    assertThat(now).extracting(OutboxRecord::attempts).containsExactly(2, 2, 1);
    clock.advanceMillis(4_999);
    assertThat(life2.claim(QUEUE, 10, now(), 600_000)).isEmpty();
    clock.advanceMillis(1);
    assertThat(life2.claim(QUEUE, 10, now(), 600_000))
        .extracting(OutboxRecord::key)
        .containsExactly(keys.get(2));

    // And its own claims are not an earlier life's
    assertThat(life2.releaseClaimsOfEarlierRuns(QUEUE)).isZero();
    assertThat(life2.claim(QUEUE, 10, now(), 600_000)).isEmpty();
  }

  @Test
  void anotherInstanceOrOneWithoutAnIdReleasesNothing() {
    // Given instance "a" and a store without an instance id each hold claims
    JdbcDedupStore a = open(b -> b.instanceId("a"));
    enqueueMessages(a, "mine", 2);
    assertThat(a.claim(QUEUE, 1, now(), 600_000)).hasSize(1);
    JdbcDedupStore anonymous = open();
    assertThat(anonymous.claim(QUEUE, 1, now(), 600_000)).hasSize(1);

    // When instance "b", and later life of the anonymous one, start
    JdbcDedupStore b = open(x -> x.instanceId("b"));
    JdbcDedupStore anonymousAgain = open();

    // Then neither releases anything: the claims stay hidden until they run out
    assertThat(b.releaseClaimsOfEarlierRuns(QUEUE)).isZero();
    assertThat(anonymousAgain.releaseClaimsOfEarlierRuns(QUEUE)).isZero();
    assertThat(b.claim(QUEUE, 10, now(), 600_000)).isEmpty();
    clock.advanceMillis(600_000);
    assertThat(b.claim(QUEUE, 10, now(), 600_000)).hasSize(2);
  }

  @Test
  void anOutboxTableWithoutTheClaimantColumnsIsMigratedOnOpen() throws SQLException {
    // Given tables as the first schema made them: the outbox without claimant and boot_id
    for (String ddl : JdbcDedupStore.schemaDdl(db().dialect(), prefix)) {
      if (!ddl.startsWith("ALTER TABLE")) {
        execute(ddl.replaceAll(",\\s*claimant [^\\n]*\\n\\s*boot_id [^,\\n]*", ""));
      }
    }
    execute("SELECT claimed_until_ms FROM " + prefix + "outbox");
    assertThatThrownBy(() -> execute("SELECT claimant FROM " + prefix + "outbox"))
        .isInstanceOf(SQLException.class);

    if (db() == TestDb.H2) {
      // H2 is not migrated (see schema-h2.sql): the store refuses the table, naming what to do
      assertThatThrownBy(() -> open(b -> b.instanceId("a")))
          .isInstanceOf(StoreException.class)
          .hasMessageContaining(prefix + "outbox")
          .hasMessageContaining("docs/stores/jdbc.md");
      return;
    }

    // When an instance opens them (twice: the migration is idempotent) and works on them
    open(b -> b.instanceId("a")).close();
    JdbcDedupStore life1 = open(b -> b.instanceId("a"));
    enqueueMessages(life1, "old", 1);
    assertThat(life1.claim(QUEUE, 1, now(), 600_000)).hasSize(1);

    // Then the columns exist and the next life releases the claim
    JdbcDedupStore life2 = open(b -> b.instanceId("a"));
    assertThat(life2.releaseClaimsOfEarlierRuns(QUEUE)).isEqualTo(1);
    assertThat(life2.claim(QUEUE, 1, now(), 600_000)).hasSize(1);
  }

  @Test
  void aDeadLettersTableWithoutTheOrderingKeyColumnIsMigratedOnOpen() throws SQLException {
    // Given tables whose dead_letters table was made before it kept the ordering key
    for (String ddl : JdbcDedupStore.schemaDdl(db().dialect(), prefix)) {
      if (ddl.startsWith("ALTER TABLE " + prefix + "dead_letters")) {
        continue;
      }
      if (ddl.startsWith("CREATE TABLE IF NOT EXISTS " + prefix + "dead_letters")) {
        ddl = ddl.replaceAll(",\\s*ordering_key [^,\\n]*", "");
      }
      execute(ddl);
    }
    assertThatThrownBy(() -> execute("SELECT ordering_key FROM " + prefix + "dead_letters"))
        .isInstanceOf(SQLException.class);

    if (db() == TestDb.H2) {
      // H2 is not migrated (see schema-h2.sql): the store refuses the table, naming what to do
      assertThatThrownBy(this::open)
          .isInstanceOf(StoreException.class)
          .hasMessageContaining(prefix + "dead_letters")
          .hasMessageContaining("docs/stores/jdbc.md");
      return;
    }

    // When a store opens them (twice: the migration is idempotent)
    open().close();
    JdbcDedupStore store = open();

    // Then a dead letter keeps its ordering key: requeued, it waits behind its key's claimed head
    DedupKey first = key("dl-first");
    DedupKey second = key("dl-second");
    for (DedupKey k : List.of(first, second)) {
      store.reserve(reserveReq(k, 1));
      assertThat(
              store.commitAndEnqueue(
                  commitReq(k, 1),
                  new OutboxMessage(QUEUE, k, "x".getBytes(StandardCharsets.UTF_8), "customer-1")))
          .isEqualTo(SettleResult.APPLIED);
    }
    OutboxRecord head = store.claim(QUEUE, 10, now(), 600_000).get(0);
    assertThat(head.key()).isEqualTo(first);
    assertThat(store.deadLetter(head, "HTTP 400", now())).isTrue();
    assertThat(store.claim(QUEUE, 10, now(), 600_000))
        .extracting(OutboxRecord::key)
        .containsExactly(second);
    assertThat(store.requeueDeadLetter(QUEUE, head.id(), now())).isPresent();
    assertThat(store.claim(QUEUE, 10, now(), 600_000)).as("behind the claimed head").isEmpty();
  }

  @Test
  void aBlankOrTooLongInstanceIdIsAConfigError() {
    JdbcDedupStore.Builder b = JdbcDedupStore.builder(url);
    assertThatThrownBy(() -> b.instanceId(" ")).hasMessageContaining("instanceId");
    assertThatThrownBy(() -> b.instanceId("x".repeat(256))).hasMessageContaining("instanceId");
  }

  // ---- sweeping ---------------------------------------------------------------------------------

  @Test
  void sweepExpiredRemovesOnlyDeadRowsInBatchesAndReportsEach() throws SQLException {
    // Given 5 abandoned reservations, 5 committed keys whose TTL passed, and 2 live keys
    List<String> expired = new CopyOnWriteArrayList<>();
    DedupListener listener =
        new DedupListener() {
          @Override
          public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
            expired.add(scope + " " + key.toHex() + " " + (leaseExpired ? "lease" : "ttl"));
          }
        };
    JdbcDedupStore store = open(b -> b.sweepBatchSize(3).listener(listener));
    List<String> want = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      DedupKey k = key("sweep-" + i);
      store.reserve(new ReserveRequest(SCOPE, k, null, i + 1, now(), 1_000, TTL));
      if (i % 2 == 0) {
        store.commit(new CommitRequest(SCOPE, k, i + 1, now(), new Ttl(2_000, Expiry.FIXED), null));
      }
      want.add(SCOPE + " " + k.toHex() + " " + (i % 2 == 0 ? "ttl" : "lease"));
    }
    clock.advanceMillis(2_000);
    store.reserve(reserveReq(key("live-1"), 100));
    store.reserve(reserveReq(key("live-2"), 101));

    // When the store sweeps (in batches of 3)
    long removed = store.sweepExpired(now());

    // Then the ten dead rows are gone, the live ones stay, and each removal was reported
    assertThat(removed).isEqualTo(10);
    assertThat(count("keys")).isEqualTo(2);
    assertThat(expired).containsExactlyInAnyOrderElementsOf(want);
    assertThat(store.sweepExpired(now())).isZero();
  }

  @Test
  void theBackgroundSweeperRemovesExpiredRowsByTheStoresClock() throws SQLException {
    // Given a store sweeping every 20 ms by a manual clock, and a reservation that was abandoned
    JdbcDedupStore store = open(b -> b.sweepInterval(Duration.ofMillis(20)));
    store.reserve(new ReserveRequest(SCOPE, key("abandoned"), null, 1, now(), 1_000, TTL));
    assertThat(count("keys")).isEqualTo(1);

    // When its lease runs out on the store's clock
    clock.advanceMillis(1_000);

    // Then the sweeper removes it
    await().atMost(Duration.ofSeconds(20)).until(() -> count("keys") == 0);
  }

  // ---- lifecycle and description ----------------------------------------------------------------

  @Test
  void describeNamesTheDatabaseAndTablesAndCapabilitiesAreHonest() {
    JdbcDedupStore store = open();
    assertThat(store.describe()).startsWith("jdbc:").contains("[" + prefix + "*]");
    assertThat(store.capabilities().outbox()).isTrue();
    assertThat(store.capabilities().nativeExpiry()).isFalse();
    assertThat(store.capabilities().boundedKeys()).isFalse();
    assertThat(store.capabilities().durable()).isEqualTo(db() != TestDb.H2);
    store.checkHealth();
  }

  @Test
  void aClosedStoreRefusesWorkAndClosingTwiceIsHarmless() {
    JdbcDedupStore store = open();
    store.close();
    store.close();
    assertThatThrownBy(() -> store.reserve(reserveReq(key("late"), 1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void clearRemovesOneScopeInBatchesAndNothingElse() {
    JdbcDedupStore store = open(b -> b.sweepBatchSize(2));
    Scope other = Scope.of("payments");
    for (int i = 0; i < 5; i++) {
      store.reserve(reserveReq(key("c-" + i), i + 1));
      store.reserve(new ReserveRequest(other, key("c-" + i), null, i + 1, now(), LEASE, TTL));
    }
    assertThat(store.clear(SCOPE)).isEqualTo(5);
    assertThat(store.inspect(SCOPE, key("c-0"), now())).isEqualTo(KeyState.ABSENT);
    assertThat(store.inspect(other, key("c-0"), now())).isInstanceOf(KeyState.InFlight.class);
  }

  @Test
  void fingerprintsSurviveTheRoundTrip() {
    JdbcDedupStore store = open();
    DedupKey k = key("fp");
    Fingerprint fp = Fingerprint.sha256("body".getBytes(StandardCharsets.UTF_8));
    store.reserve(new ReserveRequest(SCOPE, k, fp, 1, now(), LEASE, TTL));
    assertThat(store.inspect(SCOPE, k, now()))
        .isEqualTo(new KeyState.InFlight(now(), now() + LEASE, fp));
    store.commit(commitReq(k, 1));
    Fingerprint other = Fingerprint.sha256("other".getBytes(StandardCharsets.UTF_8));
    assertThat(store.reserve(new ReserveRequest(SCOPE, k, other, 2, now(), LEASE, TTL)))
        .isEqualTo(new ReserveResult.Conflict(now()));
  }
}
