package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.store.redis.RedisDedupStore;
import dev.idem.tck.ExternalService;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter on the shared Redis ({@code IDEM_REDIS_URL}, default 127.0.0.1:6379), reached through
 * the application's own Spring Data Redis (Lettuce) settings, under a key prefix of its own.
 */
@SpringBootTest(
    classes = TestApp.class,
    properties = {
      "idem.store.type=redis",
      "idem.scopes.orders.ttl=2h",
      "idem.scopes.orders.lease=30s",
      "spring.autoconfigure.exclude="
          + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"
    })
class RedisStarterTest extends StarterContract {
  private static final String PREFIX =
      "idemtest:boot:" + UUID.randomUUID().toString().substring(0, 8) + ":";
  private static ExternalService redis;

  @Autowired LettuceConnectionFactory applicationRedis;

  @BeforeAll
  static void redis() {
    redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("spring.data.redis.host", () -> redis.host());
    registry.add("spring.data.redis.port", () -> redis.port());
    registry.add(
        "spring.data.redis.database",
        () -> {
          String path = URI.create(redis.url()).getPath();
          return path == null || path.length() <= 1 ? "0" : path.substring(1);
        });
    registry.add("idem.store.redis.prefix", () -> PREFIX);
  }

  @Test
  void theStoreIsRedisOnTheApplicationsServer() {
    assertThat(store).isInstanceOf(RedisDedupStore.class);

    service.place(new TestApp.Order(id, false));

    // The key Idem wrote is on the server the application's own connection factory talks to.
    try (RedisConnection c = applicationRedis.getConnection()) {
      assertThat(c.keyCommands().keys((PREFIX + "*").getBytes(StandardCharsets.UTF_8)))
          .isNotEmpty();
    }
  }
}
