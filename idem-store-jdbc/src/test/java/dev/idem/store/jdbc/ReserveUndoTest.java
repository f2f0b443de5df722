package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * {@link ReserveUndo}'s schedule, with no delays (a zero timeout) and a recording release: how many
 * attempts each reserve gets and with which token, and that nothing is tried past the lease or
 * after close. (That an undo frees a key on a real database is in {@link AbstractStallTest}.)
 */
class ReserveUndoTest {
  private final ManualTimeSource clock = new ManualTimeSource();
  private final List<ReleaseRequest> calls = new CopyOnWriteArrayList<>();

  private ReserveUndo undo(Function<ReleaseRequest, SettleResult> answer) {
    return new ReserveUndo(
        "test-store",
        Duration.ZERO,
        Duration.ZERO,
        clock,
        r -> {
          calls.add(r);
          return answer.apply(r);
        });
  }

  private ReserveRequest reserve(long token, long leaseMillis) {
    return new ReserveRequest(
        Scope.of("undo"),
        DedupKey.ofWords(1, 2, 3, token),
        null,
        token,
        clock.wallMillis(),
        leaseMillis,
        new Ttl(60_000, Expiry.FIXED));
  }

  @Test
  void aReleaseThatRemovesTheRowEndsTheUndo() {
    try (ReserveUndo undo =
        undo(r -> calls.size() == 2 ? SettleResult.APPLIED : SettleResult.STALE)) {
      undo.schedule(List.of(reserve(7, 60_000)));

      await().until(() -> undo.pending() == 0);
      assertThat(calls).hasSize(2).allSatisfy(r -> assertThat(r.token()).isEqualTo(7));
    }
  }

  @Test
  void aRowNeverFoundOrAStoreStillDownGetsAtMostTheAttemptsOfTheSchedule() {
    try (ReserveUndo stale = undo(r -> SettleResult.STALE)) {
      stale.schedule(List.of(reserve(8, 60_000)));
      await().until(() -> stale.pending() == 0);
      assertThat(calls).hasSize(ReserveUndo.MAX_ATTEMPTS);
    }
    calls.clear();
    try (ReserveUndo down =
        undo(
            r -> {
              throw new StoreUnavailableException("test-store", false, "down; retry later");
            })) {
      down.schedule(List.of(reserve(9, 60_000), reserve(10, 60_000)));
      await().until(() -> down.pending() == 0);
      assertThat(calls).hasSize(2 * ReserveUndo.MAX_ATTEMPTS);
      assertThat(calls.stream().map(ReleaseRequest::token).distinct()).containsOnly(9L, 10L);
    }
  }

  @Test
  void nothingIsTriedOnceTheLeaseIsOver_orAfterClose() {
    try (ReserveUndo undo = undo(r -> SettleResult.STALE)) {
      ReserveRequest r = reserve(11, 1_000);
      clock.advance(Duration.ofSeconds(2)); // the lease ended before the undo ran
      undo.schedule(List.of(r));
      await().until(() -> undo.pending() == 0);
      assertThat(calls).isEmpty();

      undo.close();
      undo.schedule(List.of(reserve(12, 60_000)));
      assertThat(undo.pending()).isZero();
      assertThat(calls).isEmpty();
    }
  }
}
