package dev.idem.server.deliver;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Records listener calls as strings, e.g. {@code delivered p 2}, {@code retry p 1 HTTP 503}. */
final class RecordingListener implements DeliveryListener {
  private final List<String> events = new ArrayList<>();
  private final List<Duration> latencies = new ArrayList<>();

  @Override
  public synchronized void onDelivered(String pipeline, int attempts, Duration latency) {
    events.add("delivered " + pipeline + " " + attempts);
    latencies.add(latency);
  }

  @Override
  public synchronized void onRetry(String pipeline, int attempt, String error) {
    events.add("retry " + pipeline + " " + attempt + " " + error);
  }

  @Override
  public synchronized void onGaveUp(
      String pipeline, int attempts, String error, boolean deadLettered) {
    events.add(
        "gave-up " + pipeline + " " + attempts + " " + error + (deadLettered ? " dead" : " alive"));
  }

  synchronized List<String> events() {
    return List.copyOf(events);
  }

  synchronized List<Duration> latencies() {
    return List.copyOf(latencies);
  }
}
