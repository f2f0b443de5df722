package dev.idem.spring.boot;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Scope;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts every decision and settlement in Micrometer: {@code idem.decisions} tagged {@code scope}
 * and {@code outcome} (pass, duplicate, in_flight, conflict), and {@code idem.settlements} tagged
 * {@code scope} and {@code outcome} (committed, released, lease_lost, expired).
 */
public final class MicrometerDedupListener implements DedupListener {
  private final MeterRegistry registry;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();

  /**
   * Creates the listener.
   *
   * @param registry where the counters go
   */
  public MicrometerDedupListener(MeterRegistry registry) {
    this.registry = registry;
  }

  private void count(String meter, Scope scope, String outcome) {
    counters
        .computeIfAbsent(
            meter + '|' + scope + '|' + outcome,
            k ->
                Counter.builder(meter)
                    .tag("scope", scope.toString())
                    .tag("outcome", outcome)
                    .register(registry))
        .increment();
  }

  @Override
  public void onPass(Scope scope, DedupKey key) {
    count("idem.decisions", scope, "pass");
  }

  @Override
  public void onDuplicate(Scope scope, DedupKey key) {
    count("idem.decisions", scope, "duplicate");
  }

  @Override
  public void onInFlight(Scope scope, DedupKey key) {
    count("idem.decisions", scope, "in_flight");
  }

  @Override
  public void onConflict(Scope scope, DedupKey key) {
    count("idem.decisions", scope, "conflict");
  }

  @Override
  public void onCommitted(Scope scope, DedupKey key) {
    count("idem.settlements", scope, "committed");
  }

  @Override
  public void onReleased(Scope scope, DedupKey key) {
    count("idem.settlements", scope, "released");
  }

  @Override
  public void onLeaseLost(Scope scope, DedupKey key) {
    count("idem.settlements", scope, "lease_lost");
  }

  @Override
  public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
    count("idem.settlements", scope, leaseExpired ? "lease_expired" : "expired");
  }
}
