package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link Reservation#commitAndEnqueue}: the transactional-outbox accept through the facade settles
 * the handle and tells the listeners, like a plain commit.
 */
class ReservationOutboxTest {
  private static final Scope SCOPE = Scope.of("orders");
  private static final DedupKey KEY = DedupKey.ofWords(1, 2, 3, 4);

  private final ManualTimeSource time = new ManualTimeSource();
  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final RecordingListener listener = new RecordingListener();
  private final Deduplicator dedup =
      Deduplicator.builder(store, SCOPE)
          .config(DedupConfig.custom().lease(Duration.ofSeconds(30)).build())
          .timeSource(time)
          .listener(listener)
          .build();

  private static OutboxMessage message(String text) {
    return new OutboxMessage("orders", KEY, text.getBytes(StandardCharsets.UTF_8));
  }

  private Reservation acquire() {
    return ((Decision.Acquired) dedup.reserve(KEY)).reservation();
  }

  @Test
  void commitsTheKeyAppendsEveryMessageAndSettlesTheHandle() {
    // given
    Reservation r = acquire();

    // when
    Settlement s = r.commitAndEnqueue(List.of(message("a"), message("b")));

    // then
    assertThat(s).isEqualTo(Settlement.COMMITTED);
    assertThat(r.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.inspect(KEY)).isInstanceOf(KeyState.Committed.class);
    List<OutboxRecord> claimed = store.claim("orders", 10, time.wallMillis(), 60_000);
    assertThat(claimed)
        .extracting(rec -> new String(rec.payload(), StandardCharsets.UTF_8))
        .containsExactly("a", "b");
    assertThat(listener.events).contains("committed " + RecordingListener.id(KEY));
    assertThatThrownBy(r::commit).isInstanceOf(ReservationSettledException.class);
  }

  @Test
  void afterTheLeaseRanOutNothingIsEnqueuedAndTheHandleSaysLeaseLost() {
    // given
    Reservation r = acquire();
    time.advance(Duration.ofSeconds(31));

    // when
    Settlement s = r.commitAndEnqueue(List.of(message("late")));

    // then
    assertThat(s).isEqualTo(Settlement.LEASE_LOST);
    assertThat(store.depth("orders")).isZero();
    assertThat(listener.events).contains("leaseLost " + RecordingListener.id(KEY));
  }

  @Test
  void aStoreWithoutAnOutboxIsRefusedBeforeTheHandleIsSettled() {
    // given a deduplicator on a store that has no outbox
    Deduplicator plain = Deduplicator.builder(new MapDedupStore(), SCOPE).timeSource(time).build();
    Reservation r = ((Decision.Acquired) plain.reserve(KEY)).reservation();

    // when / then
    assertThatThrownBy(() -> r.commitAndEnqueue(List.of(message("x"))))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has no outbox");
    assertThat(r.settlement()).isNull();
    assertThat(r.commit()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void anEmptyListOfMessagesIsRefused() {
    Reservation r = acquire();

    assertThatThrownBy(() -> r.commitAndEnqueue(List.of()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(r.settlement()).isNull();
  }
}
