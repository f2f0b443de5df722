package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * What an operator does with dead letters: list them newest first, by time and page by page; read
 * one; requeue one (back into the outbox untried, the key left committed); purge one or all of a
 * queue. Every test uses its own queue names.
 */
abstract class DeadLetterChecks extends ContractChecks {
  private static final long CLAIM = 30_000;

  DeadLetterChecks(StoreFixture fx) {
    super(fx);
  }

  private String queue() {
    return scope().pipeline();
  }

  /** Commits a new key with a message in {@code queue}, claims it and dead-letters it now. */
  private DeadLetter dead(OutboxStore outbox, String queue, String payload) {
    DedupKey key = newKey();
    long token = acquire(key);
    assertSettle(
        outbox.commitAndEnqueue(
            commitRequest(key, token, SLIDING, null), new OutboxMessage(queue, key, utf8(payload))),
        SettleResult.APPLIED,
        "commitAndEnqueue");
    List<OutboxRecord> claimed = outbox.claim(queue, 1, now(), CLAIM);
    assertThat(claimed).as("the entry just enqueued").hasSize(1);
    outbox.deadLetter(queue, claimed.get(0).id(), "failed: " + payload, now());
    return outbox.findDeadLetter(queue, claimed.get(0).id()).orElseThrow();
  }

  @Test
  void deadLettersAreListedNewestFirstByTimeAndPageByPage() {
    // given five dead letters a second apart, and one in another queue
    OutboxStore outbox = fx.assumeOutbox();
    List<DeadLetter> oldestFirst = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      oldestFirst.add(dead(outbox, queue(), "d" + i));
      advance(1_000);
    }
    dead(outbox, queue() + "-other", "elsewhere");
    long t1 = oldestFirst.get(1).deadAtMillis();
    long t3 = oldestFirst.get(3).deadAtMillis();

    // when / then: everything, newest first
    assertThat(outbox.deadLetters(queue(), DeadLetterQuery.newest(10)))
        .extracting(DeadLetter::key)
        .containsExactly(
            oldestFirst.get(4).key(),
            oldestFirst.get(3).key(),
            oldestFirst.get(2).key(),
            oldestFirst.get(1).key(),
            oldestFirst.get(0).key());

    // pages of two follow each other without gaps or repeats
    List<DeadLetter> first = outbox.deadLetters(queue(), DeadLetterQuery.newest(2));
    assertThat(first)
        .extracting(DeadLetter::key)
        .containsExactly(oldestFirst.get(4).key(), oldestFirst.get(3).key());
    List<DeadLetter> second =
        outbox.deadLetters(queue(), DeadLetterQuery.newest(2).after(first.get(1)));
    assertThat(second)
        .extracting(DeadLetter::key)
        .containsExactly(oldestFirst.get(2).key(), oldestFirst.get(1).key());
    List<DeadLetter> third =
        outbox.deadLetters(queue(), DeadLetterQuery.newest(2).after(second.get(1)));
    assertThat(third).extracting(DeadLetter::key).containsExactly(oldestFirst.get(0).key());

    // a time range is since inclusive, until exclusive
    assertThat(outbox.deadLetters(queue(), DeadLetterQuery.newest(10).since(t1).until(t3)))
        .extracting(DeadLetter::key)
        .containsExactly(oldestFirst.get(2).key(), oldestFirst.get(1).key());
    assertThat(outbox.deadLetters(queue() + "-none", DeadLetterQuery.newest(10))).isEmpty();
  }

  @Test
  void oneDeadLetterIsReadByIdWithEverythingAnOperatorNeeds() {
    // given
    OutboxStore outbox = fx.assumeOutbox();
    long enqueuedAt = now();
    DeadLetter d = dead(outbox, queue(), "payload");

    // when
    DeadLetter read = outbox.findDeadLetter(queue(), d.id()).orElseThrow();

    // then
    assertThat(read.id()).isEqualTo(d.id());
    assertThat(read.queue()).isEqualTo(queue());
    assertThat(read.payload()).isEqualTo(utf8("payload"));
    assertThat(read.attempts()).isEqualTo(1);
    assertThat(read.enqueuedAtMillis()).isEqualTo(enqueuedAt);
    assertThat(read.deadAtMillis()).isEqualTo(enqueuedAt);
    assertThat(read.reason()).isEqualTo("failed: payload");
    assertThat(outbox.findDeadLetter(queue() + "-other", d.id())).as("another queue").isEmpty();
    assertThat(outbox.findDeadLetter(queue(), d.id() + 1_000_000)).as("unknown id").isEmpty();
  }

  @Test
  void requeueMovesTheDeadLetterBackUntriedAndLeavesTheKeyCommitted() {
    // given a dead letter whose key is committed
    OutboxStore outbox = fx.assumeOutbox();
    DeadLetter d = dead(outbox, queue(), "again");
    KeyState before = inspect(d.key());
    assertThat(before).isInstanceOf(KeyState.Committed.class);
    advance(5_000);
    long at = now();

    // when
    OptionalLong newId = outbox.requeueDeadLetter(queue(), d.id(), at);

    // then it is an untried outbox entry again, due at once, with the same key and payload
    assertThat(newId).as("the new outbox id").isPresent();
    assertThat(outbox.findDeadLetter(queue(), d.id()))
        .as("the dead letter after requeue")
        .isEmpty();
    assertThat(outbox.deadLetters(queue(), DeadLetterQuery.newest(10))).isEmpty();
    assertThat(outbox.depth(queue())).isEqualTo(1);
    List<PendingEntry> pending = outbox.pending(queue(), 10);
    assertThat(pending).hasSize(1);
    PendingEntry p = pending.get(0);
    assertThat(p.id()).isEqualTo(newId.getAsLong());
    assertThat(p.key()).isEqualTo(d.key());
    assertThat(p.payload()).isEqualTo(utf8("again"));
    assertThat(p.attempts()).as("attempts after requeue").isZero();
    assertThat(p.lastError()).as("last error after requeue").isNull();
    assertThat(p.enqueuedAtMillis()).as("enqueued at the requeue").isEqualTo(at);
    List<OutboxRecord> claimed = outbox.claim(queue(), 10, now(), CLAIM);
    assertThat(claimed).extracting(OutboxRecord::key).containsExactly(d.key());
    assertThat(claimed.get(0).attempts()).as("first attempt of the requeued entry").isEqualTo(1);
    // and the key was not touched: senders' retries stay duplicates
    assertState(inspect(d.key()), before);
    // a second requeue finds nothing
    assertThat(outbox.requeueDeadLetter(queue(), d.id(), now())).isEmpty();
  }

  @Test
  void purgeRemovesOneOrAllOfAQueueAndNothingElse() {
    // given three dead letters here, one in another queue, and a waiting entry
    OutboxStore outbox = fx.assumeOutbox();
    String other = queue() + "-other";
    DeadLetter a = dead(outbox, queue(), "a");
    DeadLetter b = dead(outbox, queue(), "b");
    DeadLetter c = dead(outbox, queue(), "c");
    DeadLetter elsewhere = dead(outbox, other, "x");
    DedupKey waiting = newKey();
    outbox.commitAndEnqueue(
        commitRequest(waiting, acquire(waiting), SLIDING, null),
        new OutboxMessage(queue(), waiting, utf8("w")));

    // when / then: one
    assertThat(outbox.purgeDeadLetter(queue(), b.id())).isTrue();
    assertThat(outbox.purgeDeadLetter(queue(), b.id())).as("purged twice").isFalse();
    assertThat(outbox.purgeDeadLetter(queue() + "-none", a.id()))
        .as("in a queue without it")
        .isFalse();
    assertThat(outbox.deadLetters(queue(), DeadLetterQuery.newest(10)))
        .extracting(DeadLetter::id)
        .containsExactlyInAnyOrder(a.id(), c.id());

    // all of the queue
    assertThat(outbox.purgeDeadLetters(queue())).isEqualTo(2);
    assertThat(outbox.deadLetters(queue(), DeadLetterQuery.newest(10))).isEmpty();
    assertThat(outbox.purgeDeadLetters(queue())).isZero();
    assertThat(outbox.findDeadLetter(other, elsewhere.id())).as("the other queue's").isPresent();
    assertThat(outbox.depth(queue())).as("the waiting entry").isEqualTo(1);
    assertThat(inspect(a.key()))
        .as("a purged dead letter's key")
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aRequeueAndAPurgeSurviveAReopen() {
    // given a durable store with two dead letters, one requeued and one purged
    fx.assumeDurable();
    OutboxStore outbox = fx.assumeOutbox();
    DeadLetter requeued = dead(outbox, queue(), "r");
    DeadLetter purged = dead(outbox, queue(), "p");
    DeadLetter kept = dead(outbox, queue(), "k");
    long newId = outbox.requeueDeadLetter(queue(), requeued.id(), now()).orElseThrow();
    outbox.purgeDeadLetter(queue(), purged.id());

    // when
    OutboxStore again = (OutboxStore) fx.reopen(store());

    // then
    assertThat(again.deadLetters(queue(), DeadLetterQuery.newest(10)))
        .extracting(DeadLetter::id)
        .containsExactly(kept.id());
    assertThat(again.pending(queue(), 10)).extracting(PendingEntry::id).containsExactly(newId);
  }
}
