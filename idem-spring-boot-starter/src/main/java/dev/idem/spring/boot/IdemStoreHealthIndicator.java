package dev.idem.spring.boot;

import dev.idem.spi.DedupStore;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/** Reports the store's health: up if it answers {@link DedupStore#checkHealth()}, down if not. */
public final class IdemStoreHealthIndicator implements HealthIndicator {
  private final DedupStore store;

  /**
   * Creates the indicator.
   *
   * @param store the store
   */
  public IdemStoreHealthIndicator(DedupStore store) {
    this.store = store;
  }

  @Override
  public Health health() {
    try {
      store.checkHealth();
      return Health.up().withDetail("store", store.describe()).build();
    } catch (RuntimeException e) {
      return Health.down(e).withDetail("store", store.describe()).build();
    }
  }
}
