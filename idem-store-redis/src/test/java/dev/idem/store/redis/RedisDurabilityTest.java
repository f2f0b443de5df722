package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 §4: a Redis that can forget keys is flagged. Private redis-server processes with the
 * settings under test (never the shared one): the store reports each risk, refuses to open with
 * {@code requireDurable}, and reports nothing for a server that keeps every key.
 */
class RedisDurabilityTest {
  @TempDir Path dir;

  @Test
  void anEvictingServerWithoutPersistenceIsFlaggedAndRefusedInStrictMode() throws Exception {
    // Given a Redis that evicts any key under memory pressure and persists nothing
    try (RedisProcess redis =
        RedisProcess.start(dir, "--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb")) {
      // When a store opens on it
      try (RedisDedupStore store = RedisDedupStore.builder(redis.uri()).build()) {
        // Then both risks are reported, each with its fix
        assertThat(store.durabilityRisks())
            .hasSize(2)
            .anySatisfy(r -> assertThat(r).contains("allkeys-lru").contains("noeviction"))
            .anySatisfy(r -> assertThat(r).contains("forgets every").contains("appendonly yes"));
      }

      // And in strict mode it refuses to open, naming the setting
      assertThatThrownBy(() -> RedisDedupStore.builder(redis.uri()).requireDurable(true).build())
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("allkeys-lru")
          .hasMessageContaining("require_durable");
    }
  }

  @Test
  void aPolicyChangedWhileRunningIsNoticedByTheHealthCheck() throws Exception {
    // Given a durable Redis and a store that found nothing wrong
    try (RedisProcess redis = RedisProcess.start(dir, "--appendonly", "yes");
        RedisDedupStore store = RedisDedupStore.builder(redis.uri()).requireDurable(true).build()) {
      assertThat(store.durabilityRisks()).isEmpty();

      // When an operator turns eviction on, and the periodic re-check is due
      redis.cli("CONFIG", "SET", "maxmemory-policy", "volatile-lru");
      store.expireDurabilityCheck();
      store.checkHealth();

      // Then the risk is reported
      assertThat(store.durabilityRisks()).singleElement().asString().contains("volatile-lru");
    }
  }

  @Test
  void eachSettingMapsToItsRisk() {
    assertThat(
            DurabilityCheck.risks(
                Map.of("maxmemory-policy", "noeviction", "appendonly", "yes", "save", "")))
        .isEmpty();
    assertThat(
            DurabilityCheck.risks(
                Map.of("maxmemory-policy", "noeviction", "appendonly", "no", "save", "3600 1")))
        .singleElement()
        .asString()
        .contains("since the last snapshot");
    assertThat(DurabilityCheck.risks(Map.of()))
        .hasSize(2)
        .allSatisfy(r -> assertThat(r).startsWith("cannot read"));
  }
}
