package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Reservation;
import dev.idem.Scope;
import dev.idem.server.support.TestParts;
import dev.idem.store.memory.MemoryDedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The shared sweep that renews running reservations, driven by hand on a manual clock. */
class LeaseRenewalsTest {
  private final ManualTimeSource time = new ManualTimeSource();
  private final Deduplicator dedup =
      Deduplicator.builder(MemoryDedupStore.builder().build(), Scope.of("p"))
          .timeSource(time)
          .build();
  private final List<String> renewed = new ArrayList<>();
  private boolean keepRenewing = true;
  // Shut down at once: the sweep's periodic task is refused, so only the test calls sweep().
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  private LeaseRenewals renewals() {
    timer.shutdownNow();
    return new LeaseRenewals(
        timer,
        100,
        time,
        (r, key) -> {
          renewed.add(key.toHex().substring(0, 4));
          return keepRenewing;
        });
  }

  private Reservation reserve(String id) {
    DedupKey key = TestParts.keyOf(id);
    return ((Decision.Acquired) dedup.reserve(key)).reservation();
  }

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  @Test
  void aHeldReservationIsRenewedOncePerPeriodAndNotAfterItIsClosed() {
    LeaseRenewals set = renewals();
    Reservation r = reserve("a");
    String tag = r.key().toHex().substring(0, 4);
    LeaseRenewals.Held held = set.hold(r, r.key());

    set.sweep(); // not due yet
    time.advance(Duration.ofMillis(99));
    set.sweep(); // still not due
    assertThat(renewed).isEmpty();

    time.advance(Duration.ofMillis(1));
    set.sweep(); // one period since the hold
    set.sweep(); // renewed just now: not again
    assertThat(renewed).containsExactly(tag);

    time.advance(Duration.ofMillis(100));
    set.sweep();
    assertThat(renewed).containsExactly(tag, tag);

    held.close();
    held.close(); // idempotent
    assertThat(set.size()).isZero();
    time.advance(Duration.ofMillis(500));
    set.sweep();
    assertThat(renewed).containsExactly(tag, tag);
  }

  @Test
  void aRenewalThatReportsTheLeaseLostStopsRenewingThatReservationOnly() {
    LeaseRenewals set = renewals();
    Reservation lost = reserve("lost");
    Reservation kept = reserve("kept");
    String lostTag = lost.key().toHex().substring(0, 4);
    String keptTag = kept.key().toHex().substring(0, 4);
    LeaseRenewals.Held first = set.hold(lost, lost.key());

    keepRenewing = false;
    time.advance(Duration.ofMillis(100));
    set.sweep();
    keepRenewing = true;
    LeaseRenewals.Held second = set.hold(kept, kept.key());
    time.advance(Duration.ofMillis(100));
    set.sweep();
    time.advance(Duration.ofMillis(100));
    set.sweep();

    assertThat(renewed).containsExactly(lostTag, keptTag, keptTag);
    assertThat(set.size()).isEqualTo(2);
    first.close();
    second.close();
    assertThat(set.size()).isZero();
  }
}
