package dev.idem.server.deliver;

import dev.idem.ManualTimeSource;
import dev.idem.store.redis.RedisDedupStore;
import dev.idem.tck.ExternalService;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.UUID;

/**
 * The dispatcher's guarantees over the Redis store's outbox, on the shared Redis ({@code
 * IDEM_REDIS_URL}, default 127.0.0.1:6379; skipped when it is not running, failed under CI), each
 * test under a prefix of its own whose keys are removed afterwards (SCAN + UNLINK, never FLUSHDB).
 */
class OutboxDispatcherRedisStoreTest extends OutboxDispatcherContract {
  @Override
  TestOutbox newOutbox(ManualTimeSource clock) {
    String url =
        ExternalService.require(
                "Redis",
                "IDEM_REDIS_URL",
                "redis://127.0.0.1:6379",
                6379,
                "redis-server --port 6379")
            .url();
    String prefix = "idemdisp:" + UUID.randomUUID().toString().substring(0, 8) + ":";
    RedisDedupStore store =
        RedisDedupStore.builder(url).prefix(prefix).commandTimeout(Duration.ofSeconds(15)).build();
    return new DedupStoreOutbox<>(store, clock, () -> removePrefix(url, prefix));
  }

  private static void removePrefix(String url, String prefix) {
    RedisClient client = RedisClient.create(url);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      RedisCommands<String, String> redis = c.sync();
      ScanCursor cursor = ScanCursor.INITIAL;
      ScanArgs args = new ScanArgs().match(prefix.replace("{", "\\{") + "*").limit(1000);
      do {
        var page = redis.scan(cursor, args);
        if (!page.getKeys().isEmpty()) {
          redis.unlink(page.getKeys().toArray(new String[0]));
        }
        cursor = page;
      } while (!cursor.isFinished());
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
