package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The transactional outbox: {@code commitAndEnqueue} is one atomic step (a STALE commit appends
 * nothing); claims hand entries out oldest first and hide them until the claim runs out;
 * acknowledge, reschedule and dead-letter each move an entry as documented; depth counts what is
 * waiting. Every test uses its own queue names, so a shared server needs no cleanup between tests.
 */
abstract class OutboxChecks extends ContractChecks {
  private static final long CLAIM = 30_000;

  OutboxChecks(StoreFixture fx) {
    super(fx);
  }

  private String queue() {
    return scope().pipeline();
  }

  /** Reserves a new key and commits it with a message; returns the key. */
  private DedupKey enqueue(OutboxStore outbox, String queue, byte[] payload) {
    DedupKey key = newKey();
    long token = acquire(key);
    SettleResult r =
        outbox.commitAndEnqueue(
            commitRequest(key, token, SLIDING, null), new OutboxMessage(queue, key, payload));
    assertSettle(r, SettleResult.APPLIED, "commitAndEnqueue by the holder");
    return key;
  }

  @Test
  void commitAndEnqueueCommitsTheKeyAndAppendsTheMessage() {
    // given
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey key = newKey();
    long token = acquire(key, FP_A, SLIDING);
    advance(1_000);
    long at = now();
    byte[] payload = randomBytes(300);

    // when
    SettleResult r =
        outbox.commitAndEnqueue(
            commitRequest(key, token, SLIDING, utf8("202")),
            new OutboxMessage(queue(), key, payload.clone()));

    // then both happened
    assertSettle(r, SettleResult.APPLIED, "commitAndEnqueue by the holder");
    assertState(inspect(key), committedState(at, at + WINDOW, FP_A, utf8("202")));
    assertThat(outbox.depth(queue())).as("depth").isEqualTo(1);
    List<OutboxRecord> claimed = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(claimed).hasSize(1);
    OutboxRecord rec = claimed.get(0);
    assertThat(rec.queue()).isEqualTo(queue());
    assertThat(rec.key()).isEqualTo(key);
    assertThat(rec.payload()).isEqualTo(payload);
    assertThat(rec.attempts()).as("attempts, this claim included").isEqualTo(1);
    assertThat(rec.enqueuedAtMillis()).as("enqueued at the commit's time").isEqualTo(at);
    assertThat(rec.lastError()).isNull();
  }

  @Test
  void aStaleCommitEnqueuesNothing() {
    // given a key whose lease ran out, and a key held by someone else
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey expired = newKey();
    long late = acquire(expired);
    advance(LEASE);
    DedupKey held = newKey();
    long t1 = now();
    long holder = acquire(held);

    // when
    SettleResult foreign =
        outbox.commitAndEnqueue(
            commitRequest(held, holder ^ 1, SLIDING, null),
            new OutboxMessage(queue(), held, utf8("x")));
    SettleResult afterLease =
        outbox.commitAndEnqueue(
            commitRequest(expired, late, SLIDING, null),
            new OutboxMessage(queue(), expired, utf8("y")));

    // then neither the keys nor the outbox changed
    assertSettle(foreign, SettleResult.STALE, "commitAndEnqueue with a foreign token");
    assertSettle(afterLease, SettleResult.STALE, "commitAndEnqueue after the lease ran out");
    assertState(inspect(held), inFlightState(t1, t1 + LEASE, null));
    assertState(inspect(expired), KeyState.ABSENT);
    assertThat(outbox.depth(queue())).as("depth after stale commits").isZero();
    assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("claim after stale commits").isEmpty();
  }

  @Test
  void aRetriedCommitAndEnqueueEnqueuesOnce() {
    // given a commitAndEnqueue that was applied, but whose answer the caller never got
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey key = newKey();
    long token = acquire(key);
    OutboxMessage message = new OutboxMessage(queue(), key, utf8("m"));
    assertSettle(
        outbox.commitAndEnqueue(commitRequest(key, token, SLIDING, null), message),
        SettleResult.APPLIED,
        "commitAndEnqueue");

    // when it is retried with the same token (a repeated commit "changes nothing")
    SettleResult retried =
        outbox.commitAndEnqueue(commitRequest(key, token, SLIDING, null), message);

    // then
    assertSettle(retried, SettleResult.APPLIED, "the retried commitAndEnqueue");
    assertThat(outbox.depth(queue())).as("messages after a retry").isEqualTo(1);
  }

  @Test
  void severalMessagesAreAppendedWithTheCommitInListOrder() {
    // given a held key and three messages, two for this queue and one for another
    OutboxStore outbox = fx.assumeOutbox();
    String other = queue() + "-other";
    DedupKey key = newKey();
    long token = acquire(key);
    List<OutboxMessage> messages =
        List.of(
            new OutboxMessage(queue(), key, utf8("child-0")),
            new OutboxMessage(other, key, utf8("elsewhere")),
            new OutboxMessage(queue(), key, utf8("child-1")));

    // when they are committed together
    SettleResult r = outbox.commitAndEnqueue(commitRequest(key, token, SLIDING, null), messages);

    // then every message is there, in list order per queue
    assertSettle(r, SettleResult.APPLIED, "commitAndEnqueue of three messages");
    List<String> here = new ArrayList<>();
    for (OutboxRecord rec : outbox.claim(queue(), 10, now(), CLAIM)) {
      here.add(new String(rec.payload(), java.nio.charset.StandardCharsets.UTF_8));
    }
    assertThat(here).containsExactly("child-0", "child-1");
    assertThat(outbox.depth(other)).as("depth of the other queue").isEqualTo(1);
  }

  @Test
  void aStaleOrRetriedCommitOfSeveralMessagesAppendsNoneOfThem() {
    // given a key committed with two messages, and a key held by someone else
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey key = newKey();
    long token = acquire(key);
    List<OutboxMessage> messages =
        List.of(
            new OutboxMessage(queue(), key, utf8("a")), new OutboxMessage(queue(), key, utf8("b")));
    assertSettle(
        outbox.commitAndEnqueue(commitRequest(key, token, SLIDING, null), messages),
        SettleResult.APPLIED,
        "commitAndEnqueue");
    DedupKey held = newKey();
    long holder = acquire(held);

    // when the first is retried and the second is committed with a foreign token
    SettleResult retried =
        outbox.commitAndEnqueue(commitRequest(key, token, SLIDING, null), messages);
    SettleResult foreign =
        outbox.commitAndEnqueue(
            commitRequest(held, holder ^ 1, SLIDING, null),
            List.of(
                new OutboxMessage(queue(), held, utf8("x")),
                new OutboxMessage(queue(), held, utf8("y"))));

    // then only the first commit's two messages exist
    assertSettle(retried, SettleResult.APPLIED, "the retried commitAndEnqueue");
    assertSettle(foreign, SettleResult.STALE, "commitAndEnqueue with a foreign token");
    assertThat(outbox.depth(queue())).as("messages after a retry and a stale commit").isEqualTo(2);
  }

  @Test
  void claimsHandEntriesOutInAppendOrder() {
    // given
    OutboxStore outbox = fx.assumeOutbox();
    List<DedupKey> keys = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      keys.add(enqueue(outbox, queue(), new byte[] {(byte) i}));
      advance(10);
    }

    // when
    List<OutboxRecord> first = outbox.claim(queue(), 2, now(), CLAIM);
    List<OutboxRecord> rest = outbox.claim(queue(), 10, now(), CLAIM);

    // then
    assertThat(first).extracting(OutboxRecord::key).containsExactly(keys.get(0), keys.get(1));
    assertThat(rest)
        .extracting(OutboxRecord::key)
        .containsExactly(keys.get(2), keys.get(3), keys.get(4));
    List<Long> ids = new ArrayList<>();
    first.forEach(r -> ids.add(r.id()));
    rest.forEach(r -> ids.add(r.id()));
    assertThat(ids).as("ids grow in append order").isSorted().doesNotHaveDuplicates();
    for (int i = 0; i < 5; i++) {
      OutboxRecord r = i < 2 ? first.get(i) : rest.get(i - 2);
      assertThat(r.payload()).containsExactly((byte) i);
    }
    assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("a third claim").isEmpty();
  }

  @Test
  void aClaimHidesEntriesUntilItRunsOutThenTheyComeBack() {
    // given a claimed entry whose deliverer crashed
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey key = enqueue(outbox, queue(), utf8("m"));
    long t0 = now();
    OutboxRecord first = outbox.claim(queue(), 1, t0, CLAIM).get(0);

    // when / then: hidden until the claim runs out, then handed out again
    advanceTo(t0 + CLAIM - 1);
    assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("claim while claimed").isEmpty();
    assertThat(outbox.depth(queue())).as("a claimed entry still counts").isEqualTo(1);
    advanceTo(t0 + CLAIM);
    List<OutboxRecord> again = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(again).hasSize(1);
    assertThat(again.get(0).id()).isEqualTo(first.id());
    assertThat(again.get(0).key()).isEqualTo(key);
    assertThat(again.get(0).attempts()).as("attempts after the second claim").isEqualTo(2);
  }

  @Test
  void acknowledgeRemovesTheEntry() {
    // given
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), utf8("a"));
    DedupKey second = enqueue(outbox, queue(), utf8("b"));
    OutboxRecord claimed = outbox.claim(queue(), 1, now(), CLAIM).get(0);

    // when
    boolean acknowledged = outbox.acknowledge(queue(), claimed.id());

    // then it is gone for good, the other entry is not
    assertThat(acknowledged).as("acknowledge of a claimed entry").isTrue();
    assertThat(outbox.acknowledge(queue(), claimed.id())).as("second acknowledge").isFalse();
    assertThat(outbox.depth(queue())).as("depth after acknowledge").isEqualTo(1);
    advance(CLAIM);
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .extracting(OutboxRecord::key)
        .containsExactly(second);
  }

  @Test
  void rescheduleMakesAnEntryDeliverableAgainNotBeforeTheGivenTime() {
    // given a claimed entry whose delivery failed
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey key = enqueue(outbox, queue(), utf8("m"));
    long t0 = now();
    OutboxRecord claimed = outbox.claim(queue(), 1, t0, CLAIM).get(0);

    // when it is rescheduled for after its claim would have run out
    outbox.reschedule(queue(), claimed.id(), t0 + 2 * CLAIM, "HTTP 503 from downstream");

    // then it is hidden until then, and comes back with the error and the attempt count
    advanceTo(t0 + CLAIM);
    assertThat(outbox.claim(queue(), 10, now(), CLAIM)).as("claim before notBefore").isEmpty();
    assertThat(outbox.depth(queue())).isEqualTo(1);
    advanceTo(t0 + 2 * CLAIM);
    List<OutboxRecord> again = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(again).hasSize(1);
    assertThat(again.get(0).id()).isEqualTo(claimed.id());
    assertThat(again.get(0).key()).isEqualTo(key);
    assertThat(again.get(0).attempts()).isEqualTo(2);
    assertThat(again.get(0).lastError()).isEqualTo("HTTP 503 from downstream");
  }

  @Test
  void rescheduleForNowMakesAnEntryDeliverableAtOnce() {
    OutboxStore outbox = fx.assumeOutbox();
    enqueue(outbox, queue(), utf8("m"));
    OutboxRecord claimed = outbox.claim(queue(), 1, now(), 10 * CLAIM).get(0);

    outbox.reschedule(queue(), claimed.id(), now(), "timeout");

    List<OutboxRecord> again = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(again).extracting(OutboxRecord::id).containsExactly(claimed.id());
    assertThat(again.get(0).lastError()).isEqualTo("timeout");
  }

  @Test
  void deadLetterMovesTheEntryOutOfTheOutbox() {
    // given an entry that failed for good after two attempts, and a live one
    OutboxStore outbox = fx.assumeOutbox();
    long enqueuedAt = now();
    DedupKey key = enqueue(outbox, queue(), utf8("payload"));
    DedupKey other = enqueue(outbox, queue(), utf8("other"));
    OutboxRecord claimed = outbox.claim(queue(), 1, now(), CLAIM).get(0);
    outbox.reschedule(queue(), claimed.id(), now(), "first failure");
    claimed = outbox.claim(queue(), 1, now(), CLAIM).get(0);
    advance(5_000);
    long deadAt = now();

    // when
    outbox.deadLetter(queue(), claimed.id(), "HTTP 400: rejected", deadAt);

    // then it is listed as a dead letter, and gone from claims and depth
    assertThat(outbox.depth(queue())).as("depth after dead-lettering").isEqualTo(1);
    advance(10 * CLAIM);
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .extracting(OutboxRecord::key)
        .containsExactly(other);
    List<DeadLetter> dead = outbox.deadLetters(queue(), 10);
    assertThat(dead).hasSize(1);
    DeadLetter d = dead.get(0);
    assertThat(d.id()).isEqualTo(claimed.id());
    assertThat(d.queue()).isEqualTo(queue());
    assertThat(d.key()).isEqualTo(key);
    assertThat(d.payload()).isEqualTo(utf8("payload"));
    assertThat(d.attempts()).as("attempts").isEqualTo(2);
    assertThat(d.enqueuedAtMillis()).isEqualTo(enqueuedAt);
    assertThat(d.deadAtMillis()).isEqualTo(deadAt);
    assertThat(d.reason()).isEqualTo("HTTP 400: rejected");
  }

  @Test
  void deadLettersAreListedOldestFirstUpToTheLimit() {
    OutboxStore outbox = fx.assumeOutbox();
    List<DedupKey> keys = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      keys.add(enqueue(outbox, queue(), new byte[] {(byte) i}));
    }
    for (OutboxRecord r : outbox.claim(queue(), 10, now(), CLAIM)) {
      advance(1_000);
      outbox.deadLetter(queue(), r.id(), "failed " + r.id(), now());
    }

    assertThat(outbox.deadLetters(queue(), 10))
        .extracting(DeadLetter::key)
        .containsExactlyElementsOf(keys);
    assertThat(outbox.deadLetters(queue(), 2))
        .extracting(DeadLetter::key)
        .containsExactly(keys.get(0), keys.get(1));
    assertThat(outbox.depth(queue())).isZero();
  }

  @Test
  void pendingListsWaitingEntriesWithAttemptsNextAttemptAndLastErrorAndChangesNothing() {
    // given three entries: one failed and rescheduled, one claimed, one not yet tried
    OutboxStore outbox = fx.assumeOutbox();
    long enqueuedAt = now();
    DedupKey failed = enqueue(outbox, queue(), utf8("f"));
    DedupKey claimed = enqueue(outbox, queue(), utf8("c"));
    List<OutboxRecord> firstTwo = outbox.claim(queue(), 2, now(), CLAIM);
    DedupKey fresh = enqueue(outbox, queue(), utf8("n"));
    long retryAt = now() + 7_000;
    outbox.reschedule(queue(), firstTwo.get(0).id(), retryAt, "HTTP 503 from POST downstream");

    // when
    List<PendingEntry> pending = outbox.pending(queue(), 10);

    // then each is listed in append order with what an operator needs
    assertThat(pending).extracting(PendingEntry::key).containsExactly(failed, claimed, fresh);
    PendingEntry f = pending.get(0);
    assertThat(f.id()).isEqualTo(firstTwo.get(0).id());
    assertThat(f.queue()).isEqualTo(queue());
    assertThat(f.payload()).isEqualTo(utf8("f"));
    assertThat(f.attempts()).as("attempts of the failed entry").isEqualTo(1);
    assertThat(f.enqueuedAtMillis()).isEqualTo(enqueuedAt);
    assertThat(f.availableAtMillis()).as("its retry time").isEqualTo(retryAt);
    assertThat(f.lastError()).isEqualTo("HTTP 503 from POST downstream");
    PendingEntry c = pending.get(1);
    assertThat(c.attempts()).isEqualTo(1);
    assertThat(c.availableAtMillis()).as("the end of its claim").isEqualTo(enqueuedAt + CLAIM);
    assertThat(c.lastError()).isNull();
    PendingEntry n = pending.get(2);
    assertThat(n.attempts()).as("not yet tried").isZero();
    assertThat(n.availableAtMillis()).as("due now").isLessThanOrEqualTo(now());
    assertThat(n.lastError()).isNull();
    assertThat(outbox.pending(queue(), 2))
        .extracting(PendingEntry::key)
        .containsExactly(failed, claimed);
    assertThat(outbox.pending(queue() + "-other", 10)).as("another queue").isEmpty();

    // and listing claimed nothing: the fresh entry is still the one a claim hands out now
    assertThat(outbox.claim(queue(), 10, now(), CLAIM))
        .extracting(OutboxRecord::key)
        .containsExactly(fresh);
    assertThat(outbox.pending(queue(), 10).get(2).attempts()).isEqualTo(1);
  }

  @Test
  void queuesAreIndependent() {
    // given
    OutboxStore outbox = fx.assumeOutbox();
    String a = queue();
    String b = queue() + "-b";
    DedupKey inA = enqueue(outbox, a, utf8("a"));
    DedupKey inB1 = enqueue(outbox, b, utf8("b1"));
    DedupKey inB2 = enqueue(outbox, b, utf8("b2"));

    // then
    assertThat(outbox.depth(a)).isEqualTo(1);
    assertThat(outbox.depth(b)).isEqualTo(2);
    assertThat(outbox.claim(a, 10, now(), CLAIM))
        .extracting(OutboxRecord::key)
        .containsExactly(inA);
    List<OutboxRecord> fromB = outbox.claim(b, 10, now(), CLAIM);
    assertThat(fromB).extracting(OutboxRecord::key).containsExactly(inB1, inB2);
    outbox.deadLetter(b, fromB.get(0).id(), "no", now());
    assertThat(outbox.deadLetters(a, 10)).isEmpty();
    assertThat(outbox.depth(a)).isEqualTo(1);
    assertThat(outbox.depth(b)).isEqualTo(1);
  }

  @Test
  void releasingEarlierClaimsKeepsScheduledRetriesAndReleasesOnlyClaims() {
    // given a claimed entry, one rescheduled for later, and a new one; then (for a durable store)
    // a restart, which makes the claim an earlier run's
    OutboxStore outbox = fx.assumeOutbox();
    DedupKey claimed = enqueue(outbox, queue(), utf8("c"));
    DedupKey later = enqueue(outbox, queue(), utf8("l"));
    List<OutboxRecord> both = outbox.claim(queue(), 2, now(), CLAIM);
    outbox.reschedule(queue(), both.get(1).id(), now() + 10 * CLAIM, "retry later");
    DedupKey fresh = enqueue(outbox, queue(), utf8("f"));
    OutboxStore next = fx.capabilities().durable() ? (OutboxStore) fx.reopen(store()) : outbox;

    // when the next run's dispatcher starts
    long released = next.releaseClaimsOfEarlierRuns(queue());

    // then at most the claimed entry came back; the scheduled retry still waits for its time
    assertThat(released).as("entries released").isBetween(0L, 1L);
    List<OutboxRecord> claimable = next.claim(queue(), 10, now(), CLAIM);
    if (released == 1) {
      assertThat(claimable).extracting(OutboxRecord::key).containsExactly(claimed, fresh);
      assertThat(claimable.get(0).attempts()).as("attempts of the released entry").isEqualTo(2);
    } else {
      assertThat(claimable).extracting(OutboxRecord::key).containsExactly(fresh);
    }
    assertThat(claimable).extracting(OutboxRecord::key).doesNotContain(later);
  }

  @Test
  void theOutboxSurvivesAReopen() {
    // given a durable store with a waiting entry, a claimed one and a dead letter
    fx.assumeDurable();
    OutboxStore outbox = fx.assumeOutbox();
    long enqueuedAt = now();
    DedupKey waiting = enqueue(outbox, queue(), utf8("w"));
    DedupKey dead = enqueue(outbox, queue(), utf8("d"));
    DedupKey claimed = enqueue(outbox, queue(), utf8("c"));
    List<OutboxRecord> all = outbox.claim(queue(), 10, now(), CLAIM);
    outbox.reschedule(queue(), all.get(0).id(), now(), "retry");
    outbox.deadLetter(queue(), all.get(1).id(), "gave up", now());

    // when
    OutboxStore again = (OutboxStore) fx.reopen(store());
    advance(CLAIM);

    // then (a claim may or may not outlive the reopen; it has run out here either way)
    assertThat(again.depth(queue())).as("depth after the reopen").isEqualTo(2);
    List<OutboxRecord> claimable = again.claim(queue(), 10, now(), CLAIM);
    assertThat(claimable).extracting(OutboxRecord::key).containsExactly(waiting, claimed);
    assertThat(claimable.get(0).lastError()).isEqualTo("retry");
    assertThat(claimable.get(0).enqueuedAtMillis()).isEqualTo(enqueuedAt);
    assertThat(claimable.get(0).payload()).isEqualTo(utf8("w"));
    assertThat(again.deadLetters(queue(), 10)).extracting(DeadLetter::key).containsExactly(dead);
  }
}
