package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.SettleResult;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A reservation is single use, fenced by its token, and survives an unavailable store. */
class ReservationTest {
  private static final Scope SCOPE = Scope.of("payments", "charge");
  private static final DedupKey KEY = DedupKey.ofWords(11, 22, 33, 44);

  private final ManualTimeSource time = new ManualTimeSource();
  private final FlakyStore store = new FlakyStore();
  private final Deduplicator dedup =
      Deduplicator.builder(store, SCOPE)
          .config(DedupConfig.custom().lease(Duration.ofSeconds(30)).build())
          .timeSource(time)
          .build();

  private Reservation acquire() {
    return ((Decision.Acquired) dedup.reserve(KEY)).reservation();
  }

  @Test
  void describesWhatItHolds() {
    long t0 = time.wallMillis();
    Reservation r = acquire();

    assertThat(r.key()).isEqualTo(KEY);
    assertThat(r.scope()).isEqualTo(SCOPE);
    assertThat(r.token()).isNotZero();
    assertThat(r.leaseUntil()).isEqualTo(Instant.ofEpochMilli(t0 + 30_000));
    assertThat(r.settlement()).isNull();
    assertThat(r.toString()).contains(SCOPE.toString()).contains(KEY.toHex()).contains("open");
  }

  @Test
  void commitSettlesItOnceAndASecondSettlementNamesTheKeyAndHowItEnded() {
    Reservation r = acquire();

    assertThat(r.commit(new byte[] {1})).isEqualTo(Settlement.COMMITTED);

    assertThat(r.settlement()).isEqualTo(Settlement.COMMITTED);
    assertThat(r.toString()).contains("COMMITTED");
    assertThatThrownBy(r::commit)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(KEY.toHex())
        .hasMessageContaining(SCOPE.toString())
        .hasMessageContaining("COMMITTED");
    assertThatThrownBy(r::release)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(KEY.toHex());
    assertThatThrownBy(() -> r.fanOut(2)).isInstanceOf(ReservationSettledException.class);
    assertThat(r.settlement()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void releaseSettlesItOnce() {
    Reservation r = acquire();

    assertThat(r.release()).isEqualTo(Settlement.RELEASED);

    assertThat(dedup.inspect(KEY)).isEqualTo(KeyState.ABSENT);
    assertThatThrownBy(() -> r.commit(null))
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining("RELEASED");
  }

  @Test
  void aSettlementAfterTheLeaseRanOutIsLeaseLostAndStillSingleUse() {
    Reservation r = acquire();
    time.advance(Duration.ofSeconds(30));

    assertThat(r.commit()).isEqualTo(Settlement.LEASE_LOST);

    assertThat(r.settlement()).isEqualTo(Settlement.LEASE_LOST);
    assertThat(dedup.inspect(KEY)).isEqualTo(KeyState.ABSENT);
    assertThatThrownBy(r::release).isInstanceOf(ReservationSettledException.class);
  }

  @Test
  void aReleaseAfterATakeoverIsLeaseLostAndLeavesTheNewHolder() {
    Reservation old = acquire();
    time.advance(Duration.ofSeconds(31));
    Reservation current = acquire();

    assertThat(old.release()).isEqualTo(Settlement.LEASE_LOST);

    assertThat(dedup.inspect(KEY)).isInstanceOf(KeyState.InFlight.class);
    assertThat(current.commit()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void extendKeepsTheKeyPastTheOldDeadlineAndMovesLeaseUntil() {
    // given a holder 20 s into its 30 s lease
    long t0 = time.wallMillis();
    Reservation r = acquire();
    time.advance(Duration.ofSeconds(20));

    // when it renews for the configured lease
    boolean renewed = r.extend();

    // then the old deadline passes without freeing the key, and the holder still commits
    assertThat(renewed).isTrue();
    assertThat(r.leaseUntil()).isEqualTo(Instant.ofEpochMilli(t0 + 50_000));
    time.advance(Duration.ofSeconds(15));
    assertThat(dedup.reserve(KEY)).isInstanceOf(Decision.InFlight.class);
    assertThat(r.commit()).isEqualTo(Settlement.COMMITTED);
  }

  @Test
  void extendNeverMovesLeaseUntilEarlier() {
    long t0 = time.wallMillis();
    Reservation r = acquire();

    assertThat(r.extend(Duration.ofSeconds(1))).isTrue();

    assertThat(r.leaseUntil()).isEqualTo(Instant.ofEpochMilli(t0 + 30_000));
    assertThat(((KeyState.InFlight) dedup.inspect(KEY)).leaseUntilMillis()).isEqualTo(t0 + 30_000);
  }

  @Test
  void extendAfterTheLeaseRanOutIsFalseAndTheKeyStaysFreeForAResend() {
    Reservation r = acquire();
    time.advance(Duration.ofSeconds(30));

    assertThat(r.extend(Duration.ofMinutes(5))).isFalse();

    assertThat(dedup.inspect(KEY)).isEqualTo(KeyState.ABSENT);
    assertThat(r.settlement()).isNull();
    assertThat(r.commit()).isEqualTo(Settlement.LEASE_LOST);
  }

  @Test
  void extendOfASettledReservationThrowsAndNamesTheKey() {
    Reservation r = acquire();
    r.commit();

    assertThatThrownBy(() -> r.extend(Duration.ofSeconds(30)))
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining(KEY.toHex())
        .hasMessageContaining("COMMITTED");
  }

  @Test
  void extendByLessThanAMillisecondIsRejectedWithWhatToDo() {
    Reservation r = acquire();

    assertThatThrownBy(() -> r.extend(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least 1ms")
        .hasMessageContaining(KEY.toHex());
    assertThat(r.extend(Duration.ofSeconds(40))).isTrue();
  }

  @Test
  void staysOpenWhenTheStoreIsUnavailableSoTheCommitCanBeRetried() {
    // given
    Reservation r = acquire();
    store.commitsFail = true;

    // when
    assertThatThrownBy(() -> r.commit(new byte[] {7}))
        .isInstanceOf(StoreUnavailableException.class)
        .matches(e -> ((StoreUnavailableException) e).outcomeUnknown());

    // then it is open, and a retry commits
    assertThat(r.settlement()).isNull();
    assertThat(r.toString()).contains("open");
    store.commitsFail = false;
    assertThat(r.commit(new byte[] {7})).isEqualTo(Settlement.COMMITTED);
    assertThat(dedup.inspect(KEY)).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void staysOpenWhenAReleaseFailsSoItCanBeRetried() {
    Reservation r = acquire();
    store.releasesFail = true;

    assertThatThrownBy(r::release).isInstanceOf(StoreUnavailableException.class);

    assertThat(r.settlement()).isNull();
    store.releasesFail = false;
    assertThat(r.release()).isEqualTo(Settlement.RELEASED);
  }

  @Test
  void aSecondSettlementWhileTheFirstIsInProgressIsRejected() throws Exception {
    // given a store whose commit blocks until the test lets it go
    CountDownLatch inCommit = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    MapDedupStore blocking =
        new MapDedupStore() {
          @Override
          public SettleResult commit(CommitRequest c) {
            inCommit.countDown();
            try {
              if (!letGo.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let the commit go");
              }
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
            return super.commit(c);
          }
        };
    Deduplicator d = Deduplicator.builder(blocking, SCOPE).timeSource(time).build();
    Reservation r = ((Decision.Acquired) d.reserve(KEY)).reservation();

    // when one thread is inside commit and another settles
    CompletableFuture<Settlement> first = CompletableFuture.supplyAsync(r::commit);
    assertThat(inCommit.await(10, TimeUnit.SECONDS)).isTrue();
    Throwable second = catchThrowable(r::release);
    letGo.countDown();

    // then the second is rejected and the first completes
    assertThat(second)
        .isInstanceOf(ReservationSettledException.class)
        .hasMessageContaining("being settled by another call");
    assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(Settlement.COMMITTED);
  }
}
