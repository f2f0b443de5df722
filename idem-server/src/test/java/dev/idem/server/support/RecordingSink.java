package dev.idem.server.support;

import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.deliver.Sink;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/** A sink that records what it was given and fails the next N attempts on request. */
public final class RecordingSink implements Sink {
  private final List<Delivery> delivered = new CopyOnWriteArrayList<>();
  private final AtomicInteger failNext = new AtomicInteger();
  private final AtomicInteger attempts = new AtomicInteger();
  private volatile byte[] response;

  /** Fails the next {@code n} attempts with a retryable error. */
  public void failNext(int n) {
    failNext.set(n);
  }

  /** Answers later deliveries with this body (replay mode). */
  public void respondWith(String json) {
    this.response = json.getBytes(StandardCharsets.UTF_8);
  }

  /** Returns the deliveries that succeeded, in order. */
  public List<Delivery> delivered() {
    return List.copyOf(delivered);
  }

  /** Returns the delivered bodies as text. */
  public List<String> bodies() {
    return delivered.stream().map(d -> new String(d.body(), StandardCharsets.UTF_8)).toList();
  }

  /** Returns how many attempts were made. */
  public int attempts() {
    return attempts.get();
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    attempts.incrementAndGet();
    if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      return new DeliveryOutcome.Failed("the test made this attempt fail", true);
    }
    delivered.add(delivery);
    byte[] r = response;
    return new DeliveryOutcome.Delivered(201, r, r == null ? null : "application/json");
  }

  @Override
  public String describe() {
    return "recording";
  }

  @Override
  public void close() {}
}
