package dev.idem.store.redis;

import dev.idem.tck.ExternalService;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * The shared Redis at 127.0.0.1:6379 ({@code IDEM_REDIS_URL}), one client for all tests. Tests use
 * unique random prefixes and remove only their own keys: never FLUSHDB, the server is shared.
 */
final class SharedRedis {
  private static RedisClient client;
  private static StatefulRedisConnection<byte[], byte[]> admin;

  private SharedRedis() {}

  static synchronized ExternalService service() {
    return ExternalService.require(
        "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
  }

  /** A client that fails closed, as the store requires of caller-owned clients. */
  static synchronized RedisClient client() {
    if (client == null) {
      client = RedisClient.create(service().url());
      client.setOptions(
          ClientOptions.builder()
              .autoReconnect(true)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              .build());
      admin = client.connect(ByteArrayCodec.INSTANCE);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> client.shutdown()));
    }
    return client;
  }

  static synchronized RedisCommands<byte[], byte[]> admin() {
    client();
    return admin.sync();
  }

  static String uniquePrefix() {
    return "idemtest:" + UUID.randomUUID().toString().substring(0, 8) + ":";
  }

  /** Removes every key under a prefix with SCAN + UNLINK. */
  static long removePrefix(String prefix) {
    RedisCommands<byte[], byte[]> redis = admin();
    ScanArgs args =
        new ScanArgs().match((escape(prefix) + "*").getBytes(StandardCharsets.UTF_8)).limit(1000);
    ScanCursor cursor = ScanCursor.INITIAL;
    long removed = 0;
    do {
      KeyScanCursor<byte[]> page = redis.scan(cursor, args);
      if (!page.getKeys().isEmpty()) {
        removed += redis.unlink(page.getKeys().toArray(new byte[0][]));
      }
      cursor = page;
    } while (!cursor.isFinished());
    return removed;
  }

  static long countPrefix(String prefix) {
    RedisCommands<byte[], byte[]> redis = admin();
    ScanArgs args =
        new ScanArgs().match((escape(prefix) + "*").getBytes(StandardCharsets.UTF_8)).limit(1000);
    ScanCursor cursor = ScanCursor.INITIAL;
    long n = 0;
    do {
      KeyScanCursor<byte[]> page = redis.scan(cursor, args);
      n += page.getKeys().size();
      cursor = page;
    } while (!cursor.isFinished());
    return n;
  }

  private static String escape(String prefix) {
    return prefix.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
  }
}
