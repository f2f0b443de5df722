package dev.idem.camel;

import dev.idem.spi.DedupStore;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.tck.ExternalService;
import java.util.UUID;

/**
 * The Camel route contract on the shared Redis ({@code IDEM_REDIS_URL}, default 127.0.0.1:6379),
 * under a key prefix of its own; each test clears its own scopes only.
 */
class RedisRepositoryRoutesTest extends RepositoryRoutesContract {
  @Override
  DedupStore openStore() {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    return RedisDedupStore.builder(redis.url())
        .prefix("idemtest:camel:" + UUID.randomUUID().toString().substring(0, 8) + ":")
        .build();
  }

  @Override
  void closeStore(DedupStore store) {
    store.close();
  }
}
