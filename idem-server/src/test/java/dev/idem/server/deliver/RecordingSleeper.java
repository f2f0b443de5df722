package dev.idem.server.deliver;

import dev.idem.ManualTimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A sleeper that records each wait and moves a manual clock instead of sleeping. */
final class RecordingSleeper implements Sleeper {
  private final ManualTimeSource clock;
  private final List<Duration> waits = new ArrayList<>();

  RecordingSleeper(ManualTimeSource clock) {
    this.clock = clock;
  }

  @Override
  public synchronized void sleep(Duration duration) {
    waits.add(duration);
    clock.advance(duration);
  }

  synchronized List<Duration> waits() {
    return List.copyOf(waits);
  }
}
