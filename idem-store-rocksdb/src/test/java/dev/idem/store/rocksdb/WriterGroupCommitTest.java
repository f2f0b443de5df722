package dev.idem.store.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.awaitility.Awaitility;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * The group-commit {@link Writer} with queued steps ({@link Writer#enqueue}): the thread that
 * queues a step never leads it (the writer's own threads do), a leader passes the lead on before it
 * runs its group's completions, so a slow completion (one that answers a request) does not hold
 * back the next group, and a queued step is never left without a leader. Syncs are held by a gate
 * ({@link Writer#beforeGroupSync}) and completions by latches, so nothing depends on timing.
 */
@Timeout(120)
class WriterGroupCommitTest {
  @TempDir Path dir;
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final CountDownLatch firstSyncReached = new CountDownLatch(1);
  private final CountDownLatch openFirstSync = new CountDownLatch(1);
  private final CountDownLatch slowCompletionRunning = new CountDownLatch(1);
  private final CountDownLatch finishSlowCompletion = new CountDownLatch(1);
  private final CountDownLatch slowCompletionDone = new CountDownLatch(1);
  private volatile @Nullable String firstSyncThread;
  private RocksDB db;
  private Writer writer;

  @BeforeEach
  void open() throws RocksDBException {
    db = RocksDB.open(dir.toString());
    writer = new Writer(db, Durability.GROUP_COMMIT, 0);
    CountDownLatch once = new CountDownLatch(1);
    writer.beforeGroupSync =
        () -> {
          if (once.getCount() == 0) {
            return; // only the first group's sync is held
          }
          once.countDown();
          firstSyncThread = Thread.currentThread().getName();
          firstSyncReached.countDown();
          await(openFirstSync);
        };
  }

  @AfterEach
  void close() throws InterruptedException {
    openFirstSync.countDown();
    finishSlowCompletion.countDown();
    if (slowCompletionRunning.getCount() == 0) {
      await(slowCompletionDone); // its leader may still be writing: close the database after it
    }
    threads.shutdown();
    assertThat(threads.awaitTermination(60, TimeUnit.SECONDS)).isTrue();
    // A test that failed may leave a leader that was held at the sync still writing: wait for the
    // queue to drain before the database closes under it.
    try {
      writer.awaitDurable();
    } catch (RocksDBException e) {
      throw new IllegalStateException(e);
    }
    writer.close();
    db.close();
  }

  @Test
  void theThreadThatQueuesAStepReturnsWhileTheWritersOwnThreadSyncsIt() throws Exception {
    // given: a step queued with no leader active
    CountDownLatch done = new CountDownLatch(1);
    Future<?> queuing =
        threads.submit(
            () -> {
              if (writer.enqueue(step("a"), false, error -> done.countDown())) {
                writer.leadQueued();
              }
            });

    // then: the queuing thread is back while the group's sync is still held
    assertThat(firstSyncReached.await(30, TimeUnit.SECONDS)).isTrue();
    queuing.get(30, TimeUnit.SECONDS);
    assertThat(firstSyncThread).startsWith("idem-rocksdb-group-commit");
    assertThat(done.getCount()).as("not completed before its sync").isEqualTo(1);

    // and the step completes once the sync is let through
    openFirstSync.countDown();
    assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(db.get(bytes("a"))).isNotNull();
  }

  @Test
  void whenNoThreadCanBeStartedTheQueuingThreadLeadsItself() throws Exception {
    // a thread factory that cannot make a thread, as when the JVM is out of them
    try (Writer starved = new Writer(db, Durability.GROUP_COMMIT, 0, r -> null)) {
      CountDownLatch done = new CountDownLatch(1);
      assertThat(starved.enqueue(step("z"), false, error -> done.countDown())).isTrue();

      starved.leadQueued();

      assertThat(done.getCount()).as("written and synced before leadQueued returned").isZero();
      assertThat(db.get(bytes("z"))).isNotNull();
    }
  }

  @Test
  void itsOwnThreadsAreBoundedAndWhenAllAreBusyTheQueuingThreadLeads() throws Exception {
    openFirstSync.countDown(); // this test holds completions, not syncs
    AtomicInteger made = new AtomicInteger();
    CountDownLatch release = new CountDownLatch(1);
    try (Writer bounded =
        new Writer(
            db,
            Durability.GROUP_COMMIT,
            0,
            r -> {
              made.incrementAndGet();
              Thread t = new Thread(r, "idem-rocksdb-group-commit-test");
              t.setDaemon(true);
              return t;
            })) {
      // given: as many groups as the writer has threads, each thread held in its completion
      for (int i = 0; i < Writer.MAX_THREADS; i++) {
        CountDownLatch started = new CountDownLatch(1);
        boolean leads =
            bounded.enqueue(
                step("busy-" + i),
                false,
                error -> {
                  started.countDown();
                  await(release);
                });
        assertThat(leads).as("the last group released its lead").isTrue();
        bounded.leadQueued();
        assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
      }

      // when: one more step is queued while every thread is busy
      String caller = Thread.currentThread().getName();
      AtomicReference<String> completedOn = new AtomicReference<>();
      assertThat(
              bounded.enqueue(
                  step("more"), false, error -> completedOn.set(Thread.currentThread().getName())))
          .isTrue();
      bounded.leadQueued();

      // then: no fifth thread was made; the queuing thread wrote, synced and completed it itself
      assertThat(made).hasValue(Writer.MAX_THREADS);
      assertThat(completedOn).hasValue(caller);
      assertThat(db.get(bytes("more"))).isNotNull();
      release.countDown();
    }
  }

  @Test
  void aStepQueuedBehindASlowCompletionIsWrittenWhileThatCompletionRuns() throws Exception {
    // given: a leader whose group's completion is slow, with a step queued behind its sync
    enqueueAndLead(step("a"), error -> slow());
    assertThat(firstSyncReached.await(30, TimeUnit.SECONDS)).isTrue();
    CountDownLatch queuedDone = new CountDownLatch(1);
    assertThat(writer.enqueue(step("b"), false, error -> queuedDone.countDown()))
        .as("a leader is active")
        .isFalse();

    // when: the sync is let through and the slow completion starts
    openFirstSync.countDown();
    assertThat(slowCompletionRunning.await(30, TimeUnit.SECONDS)).isTrue();

    // then: the queued step is written and completed by another of the writer's threads while
    // that completion still runs, with no other step arriving to start a leader
    assertThat(queuedDone.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(slowCompletionDone.getCount()).as("the slow completion still runs").isEqualTo(1);
    assertThat(db.get(bytes("b"))).isNotNull();

    // and when that completion ends, steps arriving later are led too
    CountDownLatch arrivedDone = new CountDownLatch(1);
    enqueueAndLead(step("c"), error -> arrivedDone.countDown());
    finishSlowCompletion.countDown();
    assertThat(arrivedDone.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(db.get(bytes("c"))).isNotNull();
  }

  @Test
  void withNothingQueuedTheLeadIsReleasedAndTheNextStepStartsALeader() throws Exception {
    // given: a group with a slow completion and nothing queued behind it
    enqueueAndLead(step("a"), error -> slow());
    assertThat(firstSyncReached.await(30, TimeUnit.SECONDS)).isTrue();
    openFirstSync.countDown();
    assertThat(slowCompletionRunning.await(30, TimeUnit.SECONDS)).isTrue();

    // when: a step arrives while that completion runs
    CountDownLatch nextDone = new CountDownLatch(1);
    boolean leads = writer.enqueue(step("d"), false, error -> nextDone.countDown());

    // then: no leader was active, so it starts one, and it is written while the completion runs
    assertThat(leads).as("the lead was released: nothing was queued").isTrue();
    writer.leadQueued();
    assertThat(nextDone.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(slowCompletionDone.getCount()).as("the slow completion still runs").isEqualTo(1);
    assertThat(db.get(bytes("d"))).isNotNull();
  }

  @Test
  void aSynchronousWriteWaitingBehindTheGroupLeadsTheNextOneWhileTheCompletionsRun()
      throws Exception {
    enqueueAndLead(step("a"), error -> slow());
    assertThat(firstSyncReached.await(30, TimeUnit.SECONDS)).isTrue();
    Future<?> sync = threads.submit(() -> writeNow(step("s")));
    // the synchronous writer is queued before the gate opens (it waits for the active leader)
    Awaitility.await().until(() -> writer.queuedForTest() == 1);
    openFirstSync.countDown();

    sync.get(30, TimeUnit.SECONDS);
    assertThat(slowCompletionDone.getCount()).as("the slow completion still runs").isEqualTo(1);
    assertThat(db.get(bytes("s"))).isNotNull();
  }

  private void enqueueAndLead(Mutations step, Consumer<@Nullable RocksDBException> done) {
    if (writer.enqueue(step, false, done)) {
      writer.leadQueued();
    }
  }

  private void writeNow(Mutations step) {
    try {
      writer.write(step, false);
    } catch (RocksDBException e) {
      throw new IllegalStateException(e);
    }
  }

  private void slow() {
    slowCompletionRunning.countDown();
    await(finishSlowCompletion);
    slowCompletionDone.countDown();
  }

  private Mutations step(String key) {
    Mutations m = new Mutations();
    m.put(db.getDefaultColumnFamily(), bytes(key), bytes("v"));
    return m;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(60, TimeUnit.SECONDS)) {
        throw new IllegalStateException("a latch of the test never opened");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
