package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What {@link OutboxDispatcher} guarantees, run against a real {@link OutboxStore} of each kind.
 * Time is a {@link ManualTimeSource}: an entry rescheduled for later cannot be claimed until the
 * test moves the clock, so "not delivered yet" is a fact, not a timing. Backoff jitter is fixed at
 * 1.0, so retries are due at exactly 1s, 2s, 4s... after a failure.
 */
abstract class OutboxDispatcherContract {
  static final String QUEUE = "orders";
  private static final DeliveryOutcome UNAVAILABLE = new DeliveryOutcome.Failed("HTTP 503", true);

  /** The outbox under test and a way to append to it. */
  interface TestOutbox extends AutoCloseable {
    OutboxStore store();

    /** Appends a payload to a queue, as commitAndEnqueue would, at the clock's time. */
    void enqueue(String queue, byte[] payload);

    /**
     * Appends a payload with the ordering key the store keeps (as the service's pipelines write
     * it), so the store hands out one entry of the key at a time.
     */
    void enqueue(String queue, byte[] payload, String orderingKey);

    @Override
    default void close() {}
  }

  /** Makes a fresh, empty outbox whose entries are timed by {@code clock}. */
  abstract TestOutbox newOutbox(ManualTimeSource clock);

  final ManualTimeSource clock = new ManualTimeSource();
  final ScriptedSink sink = new ScriptedSink();
  final RecordingListener listener = new RecordingListener();
  TestOutbox outbox;
  RecordingOutbox recording;
  private final List<OutboxDispatcher> dispatchers = new ArrayList<>();

  @BeforeEach
  void createOutbox() {
    outbox = newOutbox(clock);
    recording = new RecordingOutbox(outbox.store());
  }

  @AfterEach
  void stopEverything() {
    sink.releaseAll();
    for (OutboxDispatcher d : dispatchers) {
      d.close();
    }
    outbox.close();
  }

  static ConditionFactory eventually() {
    return await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10));
  }

  OutboxDispatcher.Builder dispatcher() {
    return OutboxDispatcher.builder(QUEUE, recording, sink)
        .timeSource(clock)
        .listener(listener)
        .jitter(() -> 1.0)
        .retryPolicy(new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofMinutes(1)))
        .pollInterval(Duration.ofMillis(20))
        .closeTimeout(Duration.ofSeconds(10));
  }

  OutboxDispatcher start(OutboxDispatcher.Builder builder) {
    OutboxDispatcher d = builder.start();
    dispatchers.add(d);
    return d;
  }

  void enqueue(String key, String orderingKey) {
    byte[] body = ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    outbox.enqueue(
        QUEUE, DeliveryCodec.encode(new Delivery(QUEUE, key, orderingKey, body, Map.of())));
  }

  /** Enqueues with the ordering key in the store too, as the service's pipelines do. */
  void enqueueKeyed(String key, String orderingKey) {
    byte[] body = ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    outbox.enqueue(
        QUEUE,
        DeliveryCodec.encode(new Delivery(QUEUE, key, orderingKey, body, Map.of())),
        orderingKey);
  }

  List<BlockedKeys.Blocked> blocked() {
    return BlockedKeys.list(outbox.store(), QUEUE, DeliveryCodec::decode);
  }

  List<DeadLetter> deadLetters() {
    return outbox.store().deadLetters(QUEUE, 100);
  }

  @Test
  void deliversAndAcknowledgesEntriesInAppendOrder() {
    enqueue("a", null);
    enqueue("b", null);
    enqueue("c", null);

    start(dispatcher().concurrency(1));

    eventually().until(() -> outbox.store().depth(QUEUE) == 0);
    assertThat(sink.delivered()).containsExactly("a", "b", "c");
    assertThat(recording.acknowledged()).containsExactly("a", "b", "c");
    // (the listener hears of a delivery just after its acknowledgement)
    eventually().until(() -> listener.events().size() == 3);
    assertThat(listener.events()).containsOnly("delivered orders 1");
  }

  @Test
  void wakeUpClaimsWithoutWaitingForThePoll() {
    // Given a dispatcher that would poll only once an hour, and has done its first claim
    OutboxDispatcher d = start(dispatcher().pollInterval(Duration.ofHours(1)));
    eventually().until(() -> recording.claims() >= 1);

    // When an entry is enqueued and the dispatcher is woken
    enqueue("a", null);
    d.wakeUp();

    // Then it is delivered (only the wake-up can have caused the claim)
    eventually().until(() -> sink.delivered().contains("a"));
  }

  @Test
  void retriesAfterTheBackoffThenDelivers() {
    // Given downstream fails the first attempt
    sink.script("a", UNAVAILABLE);
    long t0 = clock.wallMillis();
    enqueue("a", null);
    OutboxDispatcher d = start(dispatcher());

    // When the attempt fails, the entry is rescheduled 1s later
    eventually().until(() -> recording.reschedulesOf("a").size() == 1);
    assertThat(recording.reschedulesOf("a").get(0))
        .isEqualTo(new RecordingOutbox.Reschedule("a", t0 + 1_000, "HTTP 503"));
    eventually().until(() -> listener.events().equals(List.of("retry orders 1 HTTP 503")));

    // Then after 1s it is tried again and delivered
    clock.advance(Duration.ofSeconds(1));
    d.wakeUp();
    eventually().until(() -> sink.delivered().contains("a"));
    assertThat(sink.attempts()).containsExactly("a", "a");
    eventually().until(() -> listener.events().contains("delivered orders 2"));
    assertThat(outbox.store().depth(QUEUE)).isZero();
  }

  /** Issue 8 §5: async backoffs under the poll interval did not take effect. */
  @Test
  void aBackoffShorterThanThePollIntervalTakesEffectWithoutAWakeUp() {
    // Given a dispatcher that polls once an hour, a 200 ms backoff, and a first attempt that fails
    sink.script("a", UNAVAILABLE);
    long t0 = clock.wallMillis();
    enqueue("a", null);
    start(
        dispatcher()
            .pollInterval(Duration.ofHours(1))
            .retryPolicy(new RetryPolicy(3, Duration.ofMillis(200), Duration.ofMinutes(1))));
    eventually().until(() -> recording.reschedulesOf("a").size() == 1);
    assertThat(recording.reschedulesOf("a").get(0).notBefore()).isEqualTo(t0 + 200);

    // When the backoff has passed (and nobody wakes the dispatcher up)
    clock.advance(Duration.ofMillis(200));

    // Then the retry is claimed and delivered: only the retry's due time can have caused it
    eventually().until(() -> sink.delivered().contains("a"));
    assertThat(sink.attempts()).containsExactly("a", "a");
  }

  @Test
  void deadLettersAfterTheLastRetry() {
    // Given downstream that always fails, and 3 retries (4 attempts)
    sink.script("a", UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    enqueue("a", null);
    OutboxDispatcher d = start(dispatcher());

    // When each retry falls due
    for (int failures = 1; failures <= 3; failures++) {
      int n = failures;
      eventually().until(() -> recording.reschedulesOf("a").size() == n);
      clock.advance(Duration.ofMinutes(1));
      d.wakeUp();
    }

    // Then the fourth failure moves it to the dead letters
    eventually().until(() -> deadLetters().size() == 1);
    DeadLetter dead = deadLetters().get(0);
    assertThat(dead.reason()).isEqualTo("gave up after 4 attempts: HTTP 503");
    assertThat(dead.attempts()).isEqualTo(4);
    assertThat(DeliveryCodec.decode(dead.payload()).idempotencyKey()).isEqualTo("a");
    assertThat(outbox.store().depth(QUEUE)).isZero();
    assertThat(sink.attempts()).hasSize(4);
    eventually().until(() -> listener.events().contains("gave-up orders 4 HTTP 503 dead"));
    assertThat(listener.events())
        .containsExactlyInAnyOrder(
            "retry orders 1 HTTP 503",
            "retry orders 2 HTTP 503",
            "retry orders 3 HTTP 503",
            "gave-up orders 4 HTTP 503 dead");
  }

  @Test
  void aNonRetryableFailureIsDeadLetteredAtOnce() {
    sink.script("a", new DeliveryOutcome.Failed("HTTP 400: missing total", false));
    enqueue("a", null);

    start(dispatcher());

    eventually().until(() -> deadLetters().size() == 1);
    assertThat(deadLetters().get(0).reason()).isEqualTo("not retryable: HTTP 400: missing total");
    assertThat(sink.attempts()).containsExactly("a");
    assertThat(recording.reschedules()).isEmpty();
  }

  @Test
  void anUndecodablePayloadIsDeadLetteredWithoutADelivery() {
    outbox.enqueue(QUEUE, "not a delivery".getBytes(StandardCharsets.UTF_8));
    enqueue("b", null);

    start(dispatcher());

    eventually().until(() -> deadLetters().size() == 1 && sink.delivered().contains("b"));
    assertThat(deadLetters().get(0).reason()).startsWith("the outbox payload cannot be decoded");
    assertThat(sink.attempts()).containsExactly("b");
  }

  @Test
  void retryAfterFromDownstreamSetsTheNextAttempt() {
    sink.script("a", new DeliveryOutcome.Failed("HTTP 429", true, Duration.ofSeconds(30)));
    long t0 = clock.wallMillis();
    enqueue("a", null);

    start(dispatcher());

    eventually().until(() -> recording.reschedulesOf("a").size() == 1);
    assertThat(recording.reschedulesOf("a").get(0).notBefore()).isEqualTo(t0 + 30_000);
  }

  @Test
  void eventsOfOneOrderingKeyRunOneAtATimeInAppendOrder() {
    // Given 4 keys with 10 events each, interleaved, and 4 delivery threads
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      for (String key : List.of("A", "B", "C", "D")) {
        enqueue(key + i, key);
        expected.add(key + i);
      }
    }

    start(dispatcher().concurrency(4).batchSize(7));

    // Then every event is delivered, each key's in order, never two of one key at once
    eventually().until(() -> sink.delivered().size() == 40);
    assertThat(sink.delivered()).containsExactlyInAnyOrderElementsOf(expected);
    for (String key : List.of("A", "B", "C", "D")) {
      assertThat(sink.delivered().stream().filter(k -> k.startsWith(key)))
          .containsExactly(
              key + 0, key + 1, key + 2, key + 3, key + 4, key + 5, key + 6, key + 7, key + 8,
              key + 9);
    }
    assertThat(sink.orderingViolations()).isZero();
    assertThat(sink.maxConcurrent()).isLessThanOrEqualTo(4);
  }

  @Test
  void aSlowKeyDoesNotHoldUpOtherKeysOrUnorderedEvents() {
    // Given the first event of key A hangs downstream
    sink.hold("a1");
    enqueue("a1", "A");
    enqueue("a2", "A");
    enqueue("b1", "B");
    enqueue("u1", null);

    start(dispatcher().concurrency(3));

    // Then B and the unordered event are delivered meanwhile, and a2 waits behind a1
    eventually().until(() -> sink.inProgress("a1"));
    eventually().until(() -> sink.delivered().containsAll(List.of("b1", "u1")));
    assertThat(sink.attempts()).doesNotContain("a2");

    // When a1 completes, a2 follows
    sink.release("a1");
    eventually().until(() -> sink.delivered().contains("a2"));
    assertThat(sink.delivered().stream().filter(k -> k.startsWith("a")))
        .containsExactly("a1", "a2");
  }

  @Test
  void aKeyWaitingForARetryHoldsBackItsLaterEvents() {
    // Given a1 fails once; a2, a3 of the same key and b1 of another key are waiting
    sink.script("a1", UNAVAILABLE);
    long t0 = clock.wallMillis();
    enqueue("a1", "A");
    enqueue("a2", "A");
    enqueue("a3", "A");
    enqueue("b1", "B");
    OutboxDispatcher d = start(dispatcher().concurrency(4));

    // When a1 fails, a2 and a3 are handed back to the outbox, due with a1's retry
    eventually().until(() -> recording.reschedulesOf("a3").size() == 1);
    assertThat(recording.reschedulesOf("a1").get(0).notBefore()).isEqualTo(t0 + 1_000);
    for (String later : List.of("a2", "a3")) {
      RecordingOutbox.Reschedule r = recording.reschedulesOf(later).get(0);
      assertThat(r.notBefore()).isEqualTo(t0 + 1_000);
      assertThat(r.error()).contains("waiting for entry");
    }
    eventually().until(() -> sink.delivered().contains("b1"));
    assertThat(d.blockedKeys()).isEqualTo(1);

    // And an event of the key enqueued while it is blocked is held back too
    enqueue("a4", "A");
    d.wakeUp();
    eventually().until(() -> recording.reschedulesOf("a4").size() == 1);
    assertThat(recording.reschedulesOf("a4").get(0).notBefore()).isEqualTo(t0 + 1_000);
    assertThat(sink.attempts().stream().filter(k -> k.startsWith("a"))).containsExactly("a1");

    // Then once a1's retry is due, the key moves again, in append order
    clock.advance(Duration.ofSeconds(1));
    d.wakeUp();
    eventually().until(() -> sink.delivered().containsAll(List.of("a1", "a2", "a3", "a4")));
    assertThat(sink.delivered().stream().filter(k -> k.startsWith("a")))
        .containsExactly("a1", "a2", "a3", "a4");
    assertThat(sink.orderingViolations()).isZero();
    eventually().until(() -> d.blockedKeys() == 0);

    // And the claims of the held-back events did not count as attempts
    eventually().until(() -> listener.events().size() == 6);
    List<String> delivered =
        listener.events().stream().filter(e -> e.startsWith("delivered")).toList();
    assertThat(delivered)
        .containsExactlyInAnyOrder(
            "delivered orders 2", // a1
            "delivered orders 1", // a2
            "delivered orders 1", // a3
            "delivered orders 1", // a4
            "delivered orders 1"); // b1
  }

  @Test
  void aDeadLetteredEventUnblocksItsKey() {
    sink.script("a1", new DeliveryOutcome.Failed("HTTP 422", false));
    enqueue("a1", "A");
    enqueue("a2", "A");

    start(dispatcher());

    eventually().until(() -> sink.delivered().contains("a2"));
    assertThat(deadLetters()).hasSize(1);
    assertThat(sink.attempts()).containsExactly("a1", "a2");
  }

  @Test
  void atMostConcurrencyDeliveriesRunAtOnce() {
    // Given two delivery threads and three events that hang downstream
    for (String k : List.of("u1", "u2", "u3")) {
      sink.hold(k);
      enqueue(k, null);
    }

    start(dispatcher().concurrency(2));

    // Then two run and the third waits for a thread
    eventually().until(() -> sink.inProgress("u1") && sink.inProgress("u2"));
    assertThat(sink.attempts()).containsExactlyInAnyOrder("u1", "u2");
    sink.releaseAll();
    sink.release("u3");
    eventually().until(() -> sink.delivered().size() == 3);
    assertThat(sink.maxConcurrent()).isEqualTo(2);
  }

  @Test
  void anEntryReclaimedWhileItIsBeingDeliveredIsNotDeliveredTwice() {
    // Given a short claim timeout and a delivery that takes longer
    sink.hold("a");
    enqueue("a", null);
    OutboxDispatcher d = start(dispatcher().claimTimeout(Duration.ofSeconds(1)));
    eventually().until(() -> sink.inProgress("a"));

    // When the claim runs out and the store hands the entry out again
    int claimsBefore = recording.claims();
    clock.advance(Duration.ofSeconds(2));
    d.wakeUp();
    eventually().until(() -> recording.claims() > claimsBefore + 1);

    // Then the second copy is not delivered; the first completes and counts as attempt 1
    sink.release("a");
    eventually().until(() -> outbox.store().depth(QUEUE) == 0);
    assertThat(sink.attempts()).containsExactly("a");
    eventually().until(() -> listener.events().contains("delivered orders 1"));
  }

  @Test
  void closeWaitsForTheDeliveryInProgressAndHandsBackTheRest() throws Exception {
    // Given one delivery thread, busy with u1, and u2, u3 claimed behind it
    sink.hold("u1");
    enqueue("u1", null);
    enqueue("u2", null);
    enqueue("u3", null);
    OutboxDispatcher d = start(dispatcher().concurrency(1));
    eventually().until(() -> sink.inProgress("u1"));

    // When the dispatcher is closed and is waiting for u1
    Thread closer = new Thread(d::close, "closer");
    closer.start();
    eventually().until(() -> closer.getState() == Thread.State.TIMED_WAITING);
    sink.release("u1");
    closer.join();

    // Then u1 was delivered and acknowledged, and u2, u3 are back in the outbox, due now
    assertThat(sink.delivered()).containsExactly("u1");
    assertThat(outbox.store().depth(QUEUE)).isEqualTo(2);
    List<OutboxRecord> again = outbox.store().claim(QUEUE, 10, clock.wallMillis(), 60_000);
    assertThat(again)
        .extracting(r -> DeliveryCodec.decode(r.payload()).idempotencyKey())
        .containsExactly("u2", "u3");
  }

  @Test
  void entriesClaimedByACrashedRunComeBackAfterTheirClaimRunsOut() {
    // Given an entry claimed by a run that died (claimed for 60s, never settled)
    enqueue("a", null);
    assertThat(outbox.store().claim(QUEUE, 10, clock.wallMillis(), 60_000)).hasSize(1);

    // When a new dispatcher starts, it cannot have the entry yet
    OutboxDispatcher d = start(dispatcher());
    eventually().until(() -> recording.claims() >= 2);
    assertThat(sink.attempts()).isEmpty();

    // Then once the claim runs out it is delivered; the dead run's claim counted as attempt 1
    clock.advance(Duration.ofSeconds(60));
    d.wakeUp();
    eventually().until(() -> sink.delivered().contains("a"));
    eventually().until(() -> listener.events().contains("delivered orders 2"));
  }

  @Test
  void keepsClaimingWhileTheStoreIsDownAndDeliversWhenItIsBack() {
    recording.failClaims(true);
    enqueue("a", null);
    OutboxDispatcher d = start(dispatcher());
    eventually().until(() -> recording.claims() >= 3);
    assertThat(sink.attempts()).isEmpty();

    recording.failClaims(false);
    d.wakeUp();

    eventually().until(() -> sink.delivered().contains("a"));
  }

  @Test
  void aSinkThatThrowsIsRetried() {
    Sink throwing =
        new Sink() {
          private final List<String> calls = Collections.synchronizedList(new ArrayList<>());

          @Override
          public DeliveryOutcome deliver(Delivery delivery) {
            calls.add(delivery.idempotencyKey());
            if (calls.size() == 1) {
              throw new IllegalStateException("bug");
            }
            return sink.deliver(delivery);
          }

          @Override
          public String describe() {
            return "throwing";
          }

          @Override
          public void close() {}
        };
    enqueue("a", null);
    OutboxDispatcher d =
        start(
            OutboxDispatcher.builder(QUEUE, recording, throwing)
                .timeSource(clock)
                .jitter(() -> 1.0)
                .pollInterval(Duration.ofMillis(20)));

    eventually().until(() -> recording.reschedulesOf("a").size() == 1);
    assertThat(recording.reschedulesOf("a").get(0).error()).contains("threw").contains("bug");
    clock.advance(Duration.ofMinutes(1));
    d.wakeUp();
    eventually().until(() -> sink.delivered().contains("a"));
  }

  @Test
  void theBuilderRejectsSettingsOutOfRange() {
    OutboxDispatcher.Builder b = dispatcher();
    assertThatThrownBy(() -> b.concurrency(0)).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.batchSize(0)).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.maxInFlight(0)).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.pollInterval(Duration.ZERO)).isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> b.claimTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> OutboxDispatcher.builder(" ", recording, sink))
        .isInstanceOf(IdemConfigException.class);
  }

  // ---------------------------------------------------------------- poison keys: on_failure: block

  @Test
  void withBlockAnEventThatFailsForGoodBlocksOnlyItsKeyUntilAnOperatorSkipsIt() {
    // Given a1 is refused for good, a2 waits behind it, b1 is of another key
    sink.script("a1", new DeliveryOutcome.Failed("HTTP 422: bad total", false));
    long t0 = clock.wallMillis();
    enqueueKeyed("a1", "A");
    enqueueKeyed("a2", "A");
    enqueueKeyed("b1", "B");
    OutboxDispatcher d = start(dispatcher().blockOnFailure(true));

    // When a1 fails, its key is blocked, not dead lettered; the other key goes on
    eventually().until(() -> blocked().size() == 1);
    eventually().until(() -> sink.delivered().contains("b1"));
    BlockedKeys.Blocked b = blocked().get(0);
    assertThat(b.orderingKey()).isEqualTo("A");
    assertThat(b.attempts()).isEqualTo(1);
    assertThat(b.sinceMillis()).isEqualTo(t0);
    assertThat(b.lastError()).isEqualTo("HTTP 422: bad total");
    assertThat(
            DeliveryCodec.decode(outbox.store().pending(QUEUE, 10).get(0).payload())
                .idempotencyKey())
        .isEqualTo("a1");
    assertThat(deadLetters()).isEmpty();
    eventually()
        .until(() -> listener.events().contains("gave-up orders 1 HTTP 422: bad total alive"));

    // And it stays blocked however long it waits, past any claim timeout
    int claimsBefore = recording.claims();
    clock.advance(Duration.ofHours(6));
    d.wakeUp();
    eventually().until(() -> recording.claims() >= claimsBefore + 2);
    assertThat(sink.attempts()).containsExactlyInAnyOrder("a1", "b1");
    assertThat(blocked()).hasSize(1);

    // When an operator skips it
    BlockedKeys.skip(outbox.store(), QUEUE, b, clock.wallMillis());
    d.wakeUp();

    // Then it is a dead letter and the key moves on
    eventually().until(() -> sink.delivered().contains("a2"));
    assertThat(deadLetters())
        .singleElement()
        .satisfies(
            dl -> {
              assertThat(DeliveryCodec.decode(dl.payload()).idempotencyKey()).isEqualTo("a1");
              assertThat(dl.reason()).contains("skipped by an operator").contains("HTTP 422");
            });
    assertThat(blocked()).isEmpty();
    assertThat(sink.attempts()).hasSize(3).endsWith("a2");
  }

  @Test
  void withBlockARetriedEventGetsAllItsAttemptsAgainInPlace() {
    // Given one retry (two attempts), and a1 failing three times before it succeeds
    sink.script("a1", UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    enqueueKeyed("a1", "A");
    enqueueKeyed("a2", "A");
    OutboxDispatcher d =
        start(
            dispatcher()
                .blockOnFailure(true)
                .retryPolicy(new RetryPolicy(1, Duration.ofSeconds(1), Duration.ofMinutes(1))));

    // When a1 fails twice, its key is blocked after attempt 2
    eventually().until(() -> recording.reschedulesOf("a1").size() == 1);
    clock.advance(Duration.ofSeconds(1));
    d.wakeUp();
    eventually().until(() -> blocked().size() == 1);
    assertThat(blocked().get(0).attempts()).isEqualTo(2);

    // When an operator retries it, it is tried again at once and, failing, retried with backoff
    // (its attempts started again: attempt 1 of 2, not 3)
    BlockedKeys.retry(outbox.store(), QUEUE, blocked().get(0), clock.wallMillis());
    d.wakeUp();
    eventually().until(() -> sink.attempts().size() == 3);
    eventually().until(() -> recording.reschedulesOf("a1").size() == 3);
    assertThat(blocked()).isEmpty();
    assertThat(outbox.store().pending(QUEUE, 10).get(0).lastError()).contains("HTTP 503");

    // Then its next attempt succeeds and the key moves on, in order
    clock.advance(Duration.ofSeconds(1));
    d.wakeUp();
    eventually().until(() -> sink.delivered().contains("a2"));
    assertThat(sink.delivered()).containsExactly("a1", "a2");
    assertThat(deadLetters()).isEmpty();
    assertThat(sink.attempts()).containsExactly("a1", "a1", "a1", "a1", "a2");
  }

  @Test
  void aBlockedKeyStaysBlockedForTheNextDispatcherOnTheStoreAndIsSkippedFromThere() {
    // Given a first dispatcher (instance) blocked key A and stopped
    sink.script("a1", new DeliveryOutcome.Failed("HTTP 400", false));
    enqueueKeyed("a1", "A");
    enqueueKeyed("a2", "A");
    OutboxDispatcher first = start(dispatcher().blockOnFailure(true));
    eventually().until(() -> blocked().size() == 1);
    first.close();

    // When another dispatcher delivers the queue, long after
    clock.advance(Duration.ofHours(1));
    enqueueKeyed("b1", "B");
    OutboxDispatcher second = start(dispatcher().blockOnFailure(true));
    eventually().until(() -> sink.delivered().contains("b1"));

    // Then key A is still blocked there, and a skip on it lets the key move on
    assertThat(sink.attempts()).containsExactly("a1", "b1");
    BlockedKeys.skip(outbox.store(), QUEUE, blocked().get(0), clock.wallMillis());
    second.wakeUp();
    eventually().until(() -> sink.delivered().contains("a2"));
    assertThat(deadLetters()).hasSize(1);
  }

  @Test
  void withoutBlockOrWithoutAnOrderingKeyAFailureForGoodIsADeadLetter() {
    sink.script("a1", new DeliveryOutcome.Failed("HTTP 400", false));
    sink.script("u1", new DeliveryOutcome.Failed("HTTP 400", false));
    enqueueKeyed("a1", "A");
    enqueue("u1", null);

    start(dispatcher());

    eventually().until(() -> deadLetters().size() == 2);
    assertThat(blocked()).isEmpty();
  }

  @Test
  void anUnorderedEventIsDeadLetteredEvenWithBlock() {
    sink.script("u1", new DeliveryOutcome.Failed("HTTP 400", false));
    enqueue("u1", null);

    start(dispatcher().blockOnFailure(true));

    eventually().until(() -> deadLetters().size() == 1);
    assertThat(blocked()).isEmpty();
  }
}
