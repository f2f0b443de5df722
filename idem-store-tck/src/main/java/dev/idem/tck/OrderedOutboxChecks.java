package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The per-key mailbox of the outbox: entries with an ordering key are handed out one at a time per
 * key, oldest first, whatever happens to the head (claimed, rescheduled, claim run out, dead
 * lettered), also to concurrent claimers; entries without a key are never held back; a stale
 * claimer's late acknowledge, reschedule or dead letter changes nothing; and the argument contracts
 * every store answers alike. Payloads are the text {@code <ordering key>/<n>}, so a test can tell
 * entries apart by payload.
 */
abstract class OrderedOutboxChecks extends ContractChecks {
  private static final long CLAIM = 30_000;

  OrderedOutboxChecks(StoreFixture fx) {
    super(fx);
  }

  private String queue() {
    return scope().pipeline();
  }

  /** Reserves a new key and commits it with one message of that ordering key (null: none). */
  private DedupKey enqueue(OutboxStore outbox, String queue, @Nullable String orderingKey, int n) {
    DedupKey key = newKey();
    long token = acquire(key);
    String text = (orderingKey == null ? "-" : orderingKey) + "/" + n;
    SettleResult r =
        outbox.commitAndEnqueue(
            commitRequest(key, token, SLIDING, null),
            new OutboxMessage(queue, key, utf8(text), orderingKey));
    assertSettle(r, SettleResult.APPLIED, "commitAndEnqueue of " + text);
    return key;
  }

  private static String text(OutboxRecord r) {
    return new String(r.payload(), StandardCharsets.UTF_8);
  }

  private static List<String> texts(List<OutboxRecord> records) {
    List<String> out = new ArrayList<>();
    records.forEach(r -> out.add(text(r)));
    return out;
  }

  private static OutboxRecord only(List<OutboxRecord> records, String text) {
    for (OutboxRecord r : records) {
      if (text(r).equals(text)) {
        return r;
      }
    }
    throw new AssertionError("no claimed entry " + text + " in " + texts(records));
  }

  @Test
  void aClaimHandsOutOnlyTheOldestEntryOfEachOrderingKey() {
    // given two ordering keys with two entries each, interleaved with entries without a key
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "b", 1);
    enqueue(outbox, queue(), "a", 2);
    enqueue(outbox, queue(), null, 1);
    enqueue(outbox, queue(), "b", 2);
    enqueue(outbox, queue(), null, 2);

    // when
    List<OutboxRecord> first = outbox.claim(queue(), 10, now(), CLAIM);

    // then one entry per key, and every entry without a key, in append order
    assertThat(texts(first)).containsExactly("a/1", "b/1", "-/1", "-/2");
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .as("a claim while the heads are claimed")
        .isEmpty();
    assertThat(outbox.depth(queue())).as("held entries still count").isEqualTo(6);
    assertThat(outbox.pending(queue(), 10)).as("pending lists held entries").hasSize(6);

    // when the head of a is acknowledged and the head of b dead lettered
    assertThat(outbox.acknowledge(only(first, "a/1"))).as("acknowledge a/1").isTrue();
    assertThat(outbox.deadLetter(only(first, "b/1"), "HTTP 400", now())).as("dead letter").isTrue();

    // then each key moves on to its next entry
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/2", "b/2");
  }

  @Test
  void aRescheduledHeadHoldsItsKeyUntilItsRetryAndOnlyItsKey() {
    // given a key whose head failed and waits for a retry
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "a", 2);
    long t0 = now();
    OutboxRecord head = outbox.claim(queue(), 10, t0, CLAIM).get(0);
    assertThat(text(head)).isEqualTo("a/1");
    assertThat(outbox.reschedule(head, t0 + 2 * CLAIM, "HTTP 503")).as("reschedule").isTrue();
    enqueue(outbox, queue(), null, 1);
    enqueue(outbox, queue(), "b", 1);

    // when / then: before the retry, only the other entries come out
    advanceTo(t0 + CLAIM);
    List<OutboxRecord> others = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(others)).containsExactly("-/1", "b/1");
    others.forEach(r -> assertThat(outbox.acknowledge(r)).isTrue());

    // when / then: at the retry time the head comes back, still before a/2
    advanceTo(t0 + 2 * CLAIM);
    List<OutboxRecord> retry = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(retry)).containsExactly("a/1");
    assertThat(retry.get(0).attempts()).isEqualTo(2);
    assertThat(retry.get(0).lastError()).isEqualTo("HTTP 503");
    assertThat(outbox.acknowledge(retry.get(0))).isTrue();
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/2");
  }

  @Test
  void aHeadWhoseClaimRanOutIsHandedOutAgainBeforeTheNextEntryOfItsKey() {
    // given a claimed head whose deliverer died
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "a", 2);
    long t0 = now();
    assertThat(texts(outbox.claim(queue(), 10, t0, CLAIM))).containsExactly("a/1");

    // when / then: the same head comes back when its claim runs out, and a/2 still waits
    advanceTo(t0 + CLAIM - 1);
    assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("before the claim runs out").isEmpty();
    advanceTo(t0 + CLAIM);
    List<OutboxRecord> again = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(again)).containsExactly("a/1");
    assertThat(again.get(0).attempts()).isEqualTo(2);
  }

  @Test
  void aStaleClaimersLateAnswersChangeNothing() {
    // given an entry claimed twice: the first deliverer's claim ran out, a second took over
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "a", 2);
    enqueue(outbox, queue(), null, 1);
    long t0 = now();
    List<OutboxRecord> firstClaim = outbox.claim(queue(), 10, t0, CLAIM);
    assertThat(texts(firstClaim)).containsExactly("a/1", "-/1");
    advanceTo(t0 + CLAIM);
    List<OutboxRecord> secondClaim = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(secondClaim)).containsExactly("a/1", "-/1");

    // when the first deliverer answers late, for both entries
    OutboxRecord staleHead = only(firstClaim, "a/1");
    OutboxRecord staleFree = only(firstClaim, "-/1");
    boolean acknowledged = outbox.acknowledge(staleHead);
    boolean rescheduled = outbox.reschedule(staleFree, now(), "late failure");
    boolean deadLettered = outbox.deadLetter(staleHead, "late give-up", now());

    // then nothing changed: both are still there and still claimed by the second deliverer
    assertThat(acknowledged).as("a stale acknowledge").isFalse();
    assertThat(rescheduled).as("a stale reschedule").isFalse();
    assertThat(deadLettered).as("a stale dead letter").isFalse();
    assertThat(outbox.depth(queue())).isEqualTo(3);
    assertThat(outbox.deadLetters(queue(), 10)).isEmpty();
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .as("a claim while the second deliverer holds both")
        .isEmpty();
    List<PendingEntry> pending = outbox.pending(queue(), 10);
    assertThat(pending).extracting(PendingEntry::lastError).containsOnlyNulls();

    // and the current deliverer's answers apply
    assertThat(outbox.acknowledge(only(secondClaim, "a/1"))).isTrue();
    assertThat(outbox.acknowledge(only(secondClaim, "-/1"))).isTrue();
    assertThat(outbox.acknowledge(only(secondClaim, "-/1"))).as("acknowledged twice").isFalse();
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/2");
  }

  @Test
  void theFencedFormsApplyForTheCurrentClaim() {
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), null, 1);
    enqueue(outbox, queue(), null, 2);
    List<OutboxRecord> claimed = outbox.claim(queue(), 10, now(), CLAIM);
    long retryAt = now() + 5_000;

    assertThat(outbox.reschedule(claimed.get(0), retryAt, "HTTP 503")).isTrue();
    assertThat(outbox.deadLetter(claimed.get(1), "HTTP 400", now())).isTrue();

    List<PendingEntry> pending = outbox.pending(queue(), 10);
    assertThat(pending).hasSize(1);
    assertThat(pending.get(0).availableAtMillis()).isEqualTo(retryAt);
    assertThat(pending.get(0).lastError()).isEqualTo("HTTP 503");
    assertThat(outbox.deadLetters(queue(), 10))
        .extracting(DeadLetter::reason)
        .containsExactly("HTTP 400");
  }

  @Test
  void orderingKeysOfDifferentQueuesAreIndependent() {
    OutboxStore outbox = fx.assumeOutbox();
    String other = queue() + "-other";
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, other, "a", 1);
    enqueue(outbox, queue(), "a", 2);

    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/1");
    assertThat(texts(outbox.claim(other, 10, now(), CLAIM))).containsExactly("a/1");
  }

  @Test
  void concurrentClaimersNeverHoldTwoEntriesOfOneKeyAndDeliverEachKeyInOrder() throws Exception {
    // given 6 ordering keys with 5 entries each, and 6 entries without a key, interleaved
    OutboxStore outbox = fx.assumeOutbox();
    int keys = 6;
    int perKey = 5;
    for (int n = 1; n <= perKey; n++) {
      for (int k = 0; k < keys; k++) {
        enqueue(outbox, queue(), "k" + k, n);
      }
      enqueue(outbox, queue(), null, n);
    }
    int total = keys * perKey + perKey;

    // when 4 threads claim batches larger than one round of keys and acknowledge concurrently
    // (the clock stands still: no claim runs out)
    Map<String, String> holding = new ConcurrentHashMap<>();
    Map<String, List<String>> delivered = new ConcurrentHashMap<>();
    List<String> violations = new CopyOnWriteArrayList<>();
    AtomicInteger done = new AtomicInteger();
    int threads = 4;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  int idle = 0;
                  while (done.get() < total && idle < 2_000) {
                    List<OutboxRecord> batch = outbox.claim(queue(), 8, now(), CLAIM);
                    if (batch.isEmpty()) {
                      idle++;
                      Thread.yield();
                      continue;
                    }
                    idle = 0;
                    for (OutboxRecord r : batch) { // the whole batch is held at once
                      String text = text(r);
                      String key = text.substring(0, text.indexOf('/'));
                      if (!key.equals("-")) {
                        String other = holding.putIfAbsent(key, text);
                        if (other != null) {
                          violations.add(text + " handed out while " + other + " was held");
                        }
                      }
                    }
                    for (OutboxRecord r : batch) {
                      String text = text(r);
                      String key = text.substring(0, text.indexOf('/'));
                      delivered.computeIfAbsent(key, x -> new CopyOnWriteArrayList<>()).add(text);
                      if (!key.equals("-")) {
                        holding.remove(key, text); // before the ack: the next may come after it
                      }
                      if (!outbox.acknowledge(r)) {
                        violations.add("the acknowledge of " + text + " did not apply");
                      }
                      done.incrementAndGet();
                    }
                  }
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    // then no key was held twice, every entry came out once, each key in append order
    assertThat(violations).isEmpty();
    assertThat(done.get()).as("entries delivered").isEqualTo(total);
    for (int k = 0; k < keys; k++) {
      List<String> expected = new ArrayList<>();
      for (int n = 1; n <= perKey; n++) {
        expected.add("k" + k + "/" + n);
      }
      assertThat(delivered.get("k" + k))
          .as("deliveries of k" + k)
          .containsExactlyElementsOf(expected);
    }
    assertThat(delivered.get("-")).as("entries without a key").hasSize(perKey);
    assertThat(outbox.depth(queue())).isZero();
  }

  @Test
  void concurrentAcceptsOfOneKeyNeverReachTwoClaimersAtOnce() throws Exception {
    // given producers that accept entries of the same three ordering keys at the same time as
    // consumers claim and acknowledge them (the clock stands still: no claim runs out)
    OutboxStore outbox = fx.assumeOutbox();
    int producers = 3;
    int perProducer = 12;
    int total = producers * perProducer;
    Map<String, String> holding = new ConcurrentHashMap<>();
    List<String> violations = new CopyOnWriteArrayList<>();
    List<String> delivered = new CopyOnWriteArrayList<>();
    AtomicInteger produced = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    DedupKey[][] keys = new DedupKey[producers][perProducer];
    long[][] tokens = new long[producers][perProducer];
    for (int p = 0; p < producers; p++) {
      for (int i = 0; i < perProducer; i++) {
        keys[p][i] = newKey(); // the fixture's random is not thread-safe: draw here
        tokens[p][i] = newToken();
      }
    }
    ExecutorService pool = Executors.newFixedThreadPool(producers + 3);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int p = 0; p < producers; p++) {
        int producer = p;
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  for (int i = 0; i < perProducer; i++) {
                    DedupKey key = keys[producer][i];
                    long token = tokens[producer][i];
                    String orderingKey = "k" + (i % 3);
                    assertThat(store().reserve(reserveRequest(key, token)))
                        .isInstanceOf(dev.idem.spi.ReserveResult.Acquired.class);
                    assertThat(
                            outbox.commitAndEnqueue(
                                commitRequest(key, token, SLIDING, null),
                                new OutboxMessage(
                                    queue(),
                                    key,
                                    utf8(orderingKey + "/" + (producer * 100 + i)),
                                    orderingKey)))
                        .isEqualTo(SettleResult.APPLIED);
                    produced.incrementAndGet();
                  }
                  return null;
                }));
      }
      for (int c = 0; c < 3; c++) {
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  int idle = 0;
                  while (delivered.size() < total && idle < 5_000) {
                    List<OutboxRecord> batch = outbox.claim(queue(), 4, now(), CLAIM);
                    if (batch.isEmpty()) {
                      idle = produced.get() < total ? 0 : idle + 1;
                      Thread.yield();
                      continue;
                    }
                    idle = 0;
                    for (OutboxRecord r : batch) {
                      String text = text(r);
                      String key = text.substring(0, text.indexOf('/'));
                      String other = holding.putIfAbsent(key, text);
                      if (other != null) {
                        violations.add(text + " handed out while " + other + " was held");
                      }
                    }
                    for (OutboxRecord r : batch) {
                      String text = text(r);
                      delivered.add(text);
                      holding.remove(text.substring(0, text.indexOf('/')), text);
                      if (!outbox.acknowledge(r)) {
                        violations.add("the acknowledge of " + text + " did not apply");
                      }
                    }
                  }
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : futures) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    // then no key was ever held twice, and every accepted entry came out once
    assertThat(violations).isEmpty();
    assertThat(delivered).hasSize(total).doesNotHaveDuplicates();
    assertThat(outbox.depth(queue())).isZero();
  }

  /**
   * Regression: the JDBC and RocksDB stores requeued a dead letter without its ordering key, so it
   * was handed out at once, next to its key's claimed head and before the key's older entries.
   */
  @Test
  void aRequeuedDeadLetterKeepsItsOrderingKeyAndWaitsItsTurn() {
    // given a key whose first entry was dead lettered, and whose next entry is claimed
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    OutboxRecord first = outbox.claim(queue(), 10, now(), CLAIM).get(0);
    assertThat(outbox.deadLetter(first, "HTTP 400", now())).as("dead letter a/1").isTrue();
    enqueue(outbox, queue(), "a", 2);
    List<OutboxRecord> second = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(second)).containsExactly("a/2");

    // when an operator requeues a/1, and the key gets a later entry
    assertThat(outbox.requeueDeadLetter(queue(), first.id(), now())).as("requeue").isPresent();
    enqueue(outbox, queue(), "a", 3);
    enqueue(outbox, queue(), null, 1);

    // then the requeued entry is the key's entry after a/2 and before a/3
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM)))
        .as("a claim while a/2 is held: the requeued a/1 waits behind it")
        .containsExactly("-/1");
    assertThat(outbox.acknowledge(second.get(0))).isTrue();
    List<OutboxRecord> requeued = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(requeued)).as("after a/2, only the requeued a/1").containsExactly("a/1");
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .as("a claim while the requeued a/1 is held")
        .isEmpty();
    assertThat(outbox.deadLetter(requeued.get(0), "HTTP 400 again", now())).isTrue();
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM)))
        .as("dead lettered again: the key moves on")
        .containsExactly("a/3");

    // and a second requeue keeps the ordering key too (the dead letter of a requeued entry)
    long again = outbox.deadLetters(queue(), 10).get(0).id();
    enqueue(outbox, queue(), "a", 4);
    assertThat(outbox.requeueDeadLetter(queue(), again, now())).isPresent();
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .as("a/3 is still held: neither a/4 nor the requeued a/1")
        .isEmpty();
  }

  /** A durable store keeps a dead letter's ordering key across a reopen. */
  @Test
  void aDeadLettersOrderingKeySurvivesAReopen() {
    // given a durable store with a dead letter of key a and a claimed later entry of a
    fx.assumeDurable();
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    OutboxRecord first = outbox.claim(queue(), 10, now(), CLAIM).get(0);
    assertThat(outbox.deadLetter(first, "HTTP 400", now())).isTrue();
    enqueue(outbox, queue(), "a", 2);

    // when the store is reopened and the dead letter requeued
    OutboxStore again = (OutboxStore) fx.reopen(store());
    assertThat(texts(again.claim(queue(), 10, now(), CLAIM))).containsExactly("a/2");
    assertThat(again.requeueDeadLetter(queue(), first.id(), now())).isPresent();

    // then the requeued entry waits behind the claimed a/2
    assertThat(again.claim(queue(), 10, now(), CLAIM)).isEmpty();
  }

  @Test
  void theOrderOfAKeySurvivesAReopen() {
    // given a durable store with a claimed head and a later entry of its key
    fx.assumeDurable();
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "a", 2);
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/1");

    // when the store is reopened, the dispatcher releases earlier claims, and the claim runs out
    OutboxStore again = (OutboxStore) fx.reopen(store());
    again.releaseClaimsOfEarlierRuns(queue());
    advance(CLAIM);

    // then the head comes out again, never a/2 first
    assertThat(texts(again.claim(queue(), 10, now(), CLAIM))).containsExactly("a/1");
  }

  /**
   * What a poison key with {@code ordering.on_failure: block} relies on (the service parks the
   * failing head far in the future instead of dead-lettering it): a head parked until year 9999
   * holds its key and only its key, keeps its time across a reopen and the release of earlier
   * claims, shows in {@link OutboxStore#pending} with its error, and moves on when an operator
   * dead-letters it by id (skip) or makes it due now by id, in place (retry).
   */
  @Test
  void aHeadParkedUntilYear9999HoldsItsKeyUntilItIsDeadLetteredOrMadeDueById() {
    // given key a's head parked until 9999-12-31T23:59:59.999Z, and key b's entry
    OutboxStore outbox = fx.assumeOutbox();
    long parked = 253_402_300_799_999L;
    enqueue(outbox, queue(), "a", 1);
    enqueue(outbox, queue(), "a", 2);
    enqueue(outbox, queue(), "a", 3);
    OutboxRecord head = outbox.claim(queue(), 10, now(), CLAIM).get(0);
    assertThat(outbox.reschedule(head, parked, "[blocked] HTTP 400")).as("park").isTrue();
    enqueue(outbox, queue(), "b", 1);

    // then only b comes out, however much later
    advance(7L * 24 * 3_600_000);
    List<OutboxRecord> others = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(texts(others)).containsExactly("b/1");
    assertThat(outbox.acknowledge(others.get(0))).as("acknowledge b/1").isTrue();
    PendingEntry p = outbox.pending(queue(), 10).get(0);
    assertThat(p.id()).isEqualTo(head.id());
    assertThat(p.availableAtMillis()).as("the parked time, exactly").isEqualTo(parked);
    assertThat(p.lastError()).isEqualTo("[blocked] HTTP 400");
    if (fx.capabilities().durable()) {
      outbox = (OutboxStore) fx.reopen(store());
      outbox.releaseClaimsOfEarlierRuns(queue());
      advance(CLAIM);
      assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("after a reopen").isEmpty();
    }

    // when an operator makes it due now by id (retry), it comes out again before a/2
    outbox.reschedule(queue(), head.id(), now(), "retried");
    OutboxRecord again = outbox.claim(queue(), 10, now(), CLAIM).get(0);
    assertThat(text(again)).isEqualTo("a/1");
    assertThat(again.lastError()).isEqualTo("retried");

    // when it is parked again and dead lettered by id (skip), the key moves on to a/2
    assertThat(outbox.reschedule(again, parked, "[blocked] HTTP 400")).as("park again").isTrue();
    outbox.deadLetter(queue(), head.id(), "skipped", now());
    assertThat(texts(outbox.claim(queue(), 10, now(), CLAIM))).containsExactly("a/2");
    assertThat(outbox.findDeadLetter(queue(), head.id())).isPresent();
  }

  @Test
  void numbersBelowOneAreRejectedAlikeByEveryStore() {
    OutboxStore outbox = fx.assumeOutbox();
    String empty = queue() + "-empty";
    enqueue(outbox, queue(), null, 1);
    for (String q : List.of(queue(), empty)) {
      assertThatThrownBy(() -> outbox.claim(q, 0, now(), CLAIM))
          .as("claim(%s, max 0)", q)
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> outbox.claim(q, -1, now(), CLAIM))
          .as("claim(%s, max -1)", q)
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> outbox.claim(q, 1, now(), 0))
          .as("claim(%s, claimMillis 0)", q)
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> outbox.deadLetters(q, 0))
          .as("deadLetters(%s, 0)", q)
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> outbox.pending(q, 0))
          .as("pending(%s, 0)", q)
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> outbox.pending(q, -3))
          .as("pending(%s, -3)", q)
          .isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(outbox.depth(queue())).as("nothing was claimed or changed").isEqualTo(1);
    assertThat(outbox.claim(queue(), 1, now(), CLAIM)).hasSize(1);
  }
}
