package dev.idem.kafka;

import dev.idem.spi.DedupStore;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.tck.ExternalService;
import java.util.UUID;

/**
 * {@link DedupPollLoop} on the shared Redis ({@code IDEM_REDIS_URL}, default 127.0.0.1:6379), the
 * store a consumer group spread over several machines would share; each test clears its own scope.
 */
class RedisDedupPollLoopTest extends DedupPollLoopTest {
  @Override
  DedupStore openStore() {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    return RedisDedupStore.builder(redis.url())
        .prefix("idemtest:kafka:" + UUID.randomUUID().toString().substring(0, 8) + ":")
        .build();
  }
}
