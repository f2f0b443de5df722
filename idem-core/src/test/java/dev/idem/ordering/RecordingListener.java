package dev.idem.ordering;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Records what an ordering gate reports, as "expired key PT..S" / "late key PT..S". */
final class RecordingListener implements OrderingListener {
  final List<String> events = new CopyOnWriteArrayList<>();

  @Override
  public void onLockExpired(String orderingKey, Duration heldFor) {
    events.add("expired " + orderingKey + " " + heldFor);
  }

  @Override
  public void onLateRelease(String orderingKey, Duration heldFor) {
    events.add("late " + orderingKey + " " + heldFor);
  }
}
