package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The outbox on a private redis-server (a free loopback port): two store instances share one
 * ordering key's mailbox the way two service instances do, a dead instance's claim passes to the
 * other and its late answer changes nothing, the scripts come back after the server lost them, and
 * the keys follow the documented layout.
 */
class RedisOutboxTest {
  private static final Scope SCOPE = Scope.of("orders", "dedup");
  private static final Ttl TTL = new Ttl(3_600_000, Expiry.SLIDING);
  private static final long CLAIM = 30_000;
  private static final String QUEUE = "orders";

  @TempDir Path dir;

  private RedisProcess redis;
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private final AtomicLong tokens = new AtomicLong();
  private long now = 1_800_000_000_000L;

  @BeforeEach
  void startRedis() throws Exception {
    RedisProcess.requireInstalled();
    redis = RedisProcess.start(dir);
    toClose.add(redis);
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  private RedisDedupStore open() {
    RedisDedupStore store =
        RedisDedupStore.builder(redis.uri())
            .prefix("idem:")
            .commandTimeout(Duration.ofSeconds(15))
            .build();
    toClose.add(store);
    return store;
  }

  private void accept(RedisDedupStore store, long n, String orderingKey) {
    DedupKey key = DedupKey.ofWords(n, n, n, n);
    long token = tokens.incrementAndGet();
    assertThat(store.reserve(new ReserveRequest(SCOPE, key, null, token, now, 60_000, TTL)))
        .isInstanceOf(ReserveResult.Acquired.class);
    byte[] payload = (orderingKey + "/" + n).getBytes(StandardCharsets.UTF_8);
    assertThat(
            store.commitAndEnqueue(
                new CommitRequest(SCOPE, key, token, now, TTL, null),
                new OutboxMessage(QUEUE, key, payload, orderingKey)))
        .isEqualTo(SettleResult.APPLIED);
  }

  private static List<String> texts(List<OutboxRecord> records) {
    List<String> out = new ArrayList<>();
    records.forEach(r -> out.add(new String(r.payload(), StandardCharsets.UTF_8)));
    return out;
  }

  @Test
  void aRequeuedDeadLetterKeepsItsOrderingKeyAndJoinsTheEndOfItsKeysMailbox() {
    // given a dead letter of customer-7, and two later events of that customer waiting
    RedisDedupStore store = open();
    accept(store, 1, "customer-7");
    OutboxRecord poison = store.claim(QUEUE, 10, now, CLAIM).get(0);
    assertThat(store.deadLetter(poison, "HTTP 400", now)).isTrue();
    accept(store, 2, "customer-7");
    accept(store, 3, "customer-7");
    List<OutboxRecord> head = store.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(head)).containsExactly("customer-7/2");

    // when the operator requeues the dead letter
    long requeued = store.requeueDeadLetter(QUEUE, poison.id(), now).orElseThrow();

    // then it waits behind the key's other entries, and comes last, untried
    assertThat(requeued).isGreaterThan(poison.id());
    assertThat(store.claim(QUEUE, 10, now, CLAIM)).as("while the head is claimed").isEmpty();
    assertThat(store.acknowledge(head.get(0))).isTrue();
    List<OutboxRecord> next = store.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(next)).containsExactly("customer-7/3");
    assertThat(store.acknowledge(next.get(0))).isTrue();
    List<OutboxRecord> last = store.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(last)).containsExactly("customer-7/1");
    assertThat(last.get(0).id()).isEqualTo(requeued);
    assertThat(last.get(0).attempts()).isEqualTo(1);
    assertThat(last.get(0).lastError()).isNull();

    // and, dead again and requeued into an empty mailbox, it is the head at once and the key's
    // tail: an event accepted after it waits for it
    assertThat(store.deadLetter(last.get(0), "HTTP 400", now)).isTrue();
    long again = store.requeueDeadLetter(QUEUE, requeued, now).orElseThrow();
    accept(store, 4, "customer-7");
    List<OutboxRecord> alone = store.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(alone)).containsExactly("customer-7/1");
    assertThat(alone.get(0).id()).isEqualTo(again);
    assertThat(store.acknowledge(alone.get(0))).isTrue();
    assertThat(texts(store.claim(QUEUE, 10, now, CLAIM))).containsExactly("customer-7/4");
    assertThat(store.findDeadLetter(QUEUE, requeued)).isEmpty();
    assertThat(store.requeueDeadLetter(QUEUE, requeued, now)).isEmpty();
  }

  @Test
  void twoInstancesShareAKeysMailboxAndADeadOwnersLateAnswerChangesNothing() {
    // given two instances on one Redis, and three events of one customer accepted by either
    RedisDedupStore first = open();
    RedisDedupStore second = open();
    accept(first, 1, "customer-7");
    accept(second, 2, "customer-7");
    accept(first, 3, "customer-7");

    // when the first instance claims the key's head, the second gets nothing of that key
    List<OutboxRecord> owned = first.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(owned)).containsExactly("customer-7/1");
    assertThat(second.claim(QUEUE, 10, now, CLAIM)).isEmpty();

    // when the first instance dies and its claim runs out, the second picks up the same head
    now += CLAIM;
    List<OutboxRecord> takenOver = second.claim(QUEUE, 10, now, CLAIM);
    assertThat(texts(takenOver)).containsExactly("customer-7/1");
    assertThat(takenOver.get(0).attempts()).isEqualTo(2);

    // then the dead owner's late acknowledge changes nothing; the new owner's moves the key on
    assertThat(first.acknowledge(owned.get(0))).isFalse();
    assertThat(second.depth(QUEUE)).isEqualTo(3);
    assertThat(second.acknowledge(takenOver.get(0))).isTrue();
    assertThat(texts(first.claim(QUEUE, 10, now, CLAIM))).containsExactly("customer-7/2");
  }

  @Test
  void theOutboxScriptsComeBackAfterTheServerLostThem() throws Exception {
    RedisDedupStore store = open();
    accept(store, 1, "k");
    redis.cli("SCRIPT", "FLUSH");

    accept(store, 2, "k");
    redis.cli("SCRIPT", "FLUSH");
    List<OutboxRecord> claimed = store.claim(QUEUE, 10, now, CLAIM);

    assertThat(texts(claimed)).containsExactly("k/1");
    redis.cli("SCRIPT", "FLUSH");
    assertThat(store.acknowledge(claimed.get(0))).isTrue();
    assertThat(texts(store.claim(QUEUE, 10, now, CLAIM))).containsExactly("k/2");
  }

  @Test
  void theKeysFollowTheDocumentedLayout() throws Exception {
    // given one accepted event and one dead letter
    RedisDedupStore store = open();
    accept(store, 1, "k");
    accept(store, 2, "k");
    OutboxRecord head = store.claim(QUEUE, 10, now, CLAIM).get(0);
    assertThat(store.deadLetter(head, "HTTP 400", now)).isTrue();

    // then every outbox key carries the queue's hash tag
    String keys = redis.cli("--scan", "--pattern", "idem:outbox:*");
    assertThat(keys.lines().sorted().toList())
        .containsExactly(
            "idem:outbox:{orders}:a",
            "idem:outbox:{orders}:d",
            "idem:outbox:{orders}:dl",
            "idem:outbox:{orders}:dp",
            "idem:outbox:{orders}:m",
            "idem:outbox:{orders}:p",
            "idem:outbox:{orders}:r",
            "idem:outbox:{orders}:seq",
            "idem:outbox:{orders}:t");
    assertThat(redis.cli("HGET", "idem:outbox:{orders}:t", "k")).isEqualTo("0000000000000002");
    assertThat(redis.cli("ZRANGE", "idem:outbox:{orders}:r", "0", "-1"))
        .isEqualTo("0000000000000002");
  }

  @Test
  void aQueueNameWithABraceIsRefusedWithTheReason() {
    RedisDedupStore store = open();
    assertThatThrownBy(() -> store.claim("orders{eu}", 1, now, CLAIM))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hash tag");
  }
}
