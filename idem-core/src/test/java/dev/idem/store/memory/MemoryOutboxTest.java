package dev.idem.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The memory store's outbox: atomic with the commit, ordered per queue, claims and retries. */
class MemoryOutboxTest {
  static final Scope SCOPE = Scope.of("shop-orders");
  static final String QUEUE = "shop-orders";
  static final Ttl HOUR = new Ttl(3_600_000, Expiry.SLIDING);

  final ManualTimeSource clock = new ManualTimeSource();
  final MemoryDedupStore store = MemoryDedupStore.builder().deadLettersPerQueue(2).build();
  long token;

  long now() {
    return clock.wallMillis();
  }

  static DedupKey key(int i) {
    return DedupKey.ofWords(i, 1, 2, 3);
  }

  SettleResult deliverLater(int i, String queue) {
    store.reserve(new ReserveRequest(SCOPE, key(i), null, ++token, now(), 1_000, HOUR));
    return commitAndEnqueue(i, queue, token);
  }

  SettleResult commitAndEnqueue(int i, String queue, long withToken) {
    return store.commitAndEnqueue(
        new CommitRequest(SCOPE, key(i), withToken, now(), HOUR, null),
        new OutboxMessage(queue, key(i), new byte[] {(byte) i}));
  }

  @Test
  void aMessageIsAppendedOnlyWithItsCommit() {
    assertThat(deliverLater(1, QUEUE)).isEqualTo(SettleResult.APPLIED);
    assertThat(commitAndEnqueue(2, QUEUE, 77)).isEqualTo(SettleResult.STALE);
    assertThat(commitAndEnqueue(1, QUEUE, token)).isEqualTo(SettleResult.APPLIED);

    assertThat(store.depth(QUEUE)).isEqualTo(1);
    assertThat(store.claim(QUEUE, 10, now(), 1_000))
        .extracting(OutboxRecord::key)
        .containsExactly(key(1));
  }

  @Test
  void claimsHandOutTheOldestEntriesAndHideThemUntilTheClaimRunsOut() {
    for (int i = 1; i <= 4; i++) {
      deliverLater(i, QUEUE);
      clock.advanceMillis(1);
    }

    List<OutboxRecord> first = store.claim(QUEUE, 2, now(), 500);
    List<OutboxRecord> second = store.claim(QUEUE, 5, now(), 500);
    List<OutboxRecord> none = store.claim(QUEUE, 5, now() + 499, 500);
    clock.advanceMillis(500);
    List<OutboxRecord> again = store.claim(QUEUE, 1, now(), 500);

    assertThat(first).extracting(OutboxRecord::key).containsExactly(key(1), key(2));
    assertThat(first).extracting(OutboxRecord::attempts).containsExactly(1, 1);
    assertThat(first.get(0).id()).isLessThan(first.get(1).id());
    assertThat(first.get(0).payload()).containsExactly(1);
    assertThat(first.get(0).queue()).isEqualTo(QUEUE);
    assertThat(first.get(0).enqueuedAtMillis()).isEqualTo(now() - 504);
    assertThat(second).extracting(OutboxRecord::key).containsExactly(key(3), key(4));
    assertThat(none).isEmpty();
    assertThat(again).extracting(OutboxRecord::key).containsExactly(key(1));
    assertThat(again.get(0).attempts()).isEqualTo(2);
    assertThat(store.depth(QUEUE)).isEqualTo(4);
  }

  @Test
  void acknowledgedEntriesAreGone() {
    deliverLater(1, QUEUE);
    OutboxRecord r = store.claim(QUEUE, 1, now(), 500).get(0);

    assertThat(store.acknowledge(QUEUE, r.id())).isTrue();
    assertThat(store.acknowledge(QUEUE, r.id())).isFalse();
    assertThat(store.depth(QUEUE)).isZero();
    assertThat(store.claim(QUEUE, 1, now() + 10_000, 500)).isEmpty();
  }

  @Test
  void aRescheduledEntryWaitsAndCarriesItsError() {
    deliverLater(1, QUEUE);
    OutboxRecord r = store.claim(QUEUE, 1, now(), 60_000).get(0);

    store.reschedule(QUEUE, r.id(), now() + 100, "HTTP 503");

    assertThat(store.claim(QUEUE, 1, now() + 99, 500)).isEmpty();
    OutboxRecord retried = store.claim(QUEUE, 1, now() + 100, 500).get(0);
    assertThat(retried.lastError()).isEqualTo("HTTP 503");
    assertThat(retried.attempts()).isEqualTo(2);
  }

  @Test
  void deadLettersLeaveTheOutboxAndKeepTheLatestOnes() {
    for (int i = 1; i <= 3; i++) {
      deliverLater(i, QUEUE);
    }
    List<OutboxRecord> claimed = store.claim(QUEUE, 3, now(), 500);

    for (OutboxRecord r : claimed) {
      store.deadLetter(QUEUE, r.id(), "gave up on " + r.payload()[0], now() + 7);
    }
    store.deadLetter(QUEUE, 12_345, "unknown id", now());

    assertThat(store.depth(QUEUE)).isZero();
    List<DeadLetter> dead = store.deadLetters(QUEUE, 10);
    assertThat(dead).extracting(DeadLetter::key).containsExactly(key(2), key(3));
    assertThat(dead.get(0).reason()).isEqualTo("gave up on 2");
    assertThat(dead.get(0).attempts()).isEqualTo(1);
    assertThat(dead.get(0).deadAtMillis()).isEqualTo(now() + 7);
    assertThat(store.deadLetters(QUEUE, 1)).extracting(DeadLetter::key).containsExactly(key(2));
  }

  @Test
  void queuesAreIndependentAndUnknownQueuesAreEmpty() {
    deliverLater(1, "a");
    deliverLater(2, "b");
    deliverLater(3, "a");

    assertThat(store.claim("a", 10, now(), 500))
        .extracting(OutboxRecord::key)
        .containsExactly(key(1), key(3));
    assertThat(store.depth("b")).isEqualTo(1);
    assertThat(store.depth("nobody")).isZero();
    assertThat(store.claim("nobody", 10, now(), 500)).isEmpty();
    assertThat(store.deadLetters("nobody", 10)).isEmpty();
    assertThat(store.acknowledge("nobody", 1)).isFalse();
  }

  @Test
  void theOutboxIsNotBoundedByMaxKeys() {
    MemoryDedupStore tiny = MemoryDedupStore.builder().maxKeysPerScope(1).build();
    for (int i = 0; i < 5; i++) {
      tiny.reserve(new ReserveRequest(SCOPE, key(i), null, i + 1, now(), 1_000, HOUR));
      tiny.commitAndEnqueue(
          new CommitRequest(SCOPE, key(i), i + 1, now(), HOUR, null),
          new OutboxMessage(QUEUE, key(i), new byte[0]));
    }

    assertThat(tiny.size(SCOPE)).isEqualTo(1);
    assertThat(tiny.depth(QUEUE)).isEqualTo(5);
  }
}
