package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.store.memory.MemoryDedupStore;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

/** The starter on its default store (memory). */
@SpringBootTest(
    classes = TestApp.class,
    properties = {
      "idem.scopes.orders.ttl=2h",
      "idem.scopes.orders.lease=30s",
      "spring.autoconfigure.exclude="
          + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"
    })
class MemoryStarterTest extends StarterContract {
  @Test
  void theDefaultStoreIsTheMemoryStore() {
    assertThat(store).isInstanceOf(MemoryDedupStore.class);
  }
}
