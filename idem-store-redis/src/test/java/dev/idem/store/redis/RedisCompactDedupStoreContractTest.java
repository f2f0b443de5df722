package dev.idem.store.redis;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.tck.DedupStoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/**
 * The store contract suite, unchanged, against the shared Redis in the compact layout. Its answers
 * are exact to the millisecond (deadlines are kept in the values and judged by the caller's clock),
 * so the suite needs no precision allowance; only the reclaiming of memory is per bucket. Four
 * shards put many of a test's keys into one hash and one directory, so that moves between buckets
 * and shared buckets are exercised.
 */
class RedisCompactDedupStoreContractTest extends DedupStoreContract {
  private final List<String> prefixes = new ArrayList<>();

  @Override
  protected DedupStore newStore(TimeSource time) {
    String prefix = SharedRedis.uniquePrefix();
    prefixes.add(prefix);
    return open(prefix);
  }

  @Override
  protected DedupStore reopen(DedupStore store, TimeSource time) {
    String prefix = ((RedisDedupStore) store).config().prefix();
    store.close();
    return open(prefix);
  }

  private static RedisDedupStore open(String prefix) {
    return RedisDedupStore.builder(SharedRedis.client())
        .prefix(prefix)
        .layout(RedisDedupStoreConfig.Layout.COMPACT)
        .compactShards(4)
        .commandTimeout(Duration.ofSeconds(15))
        .build();
  }

  @AfterEach
  void removeKeys() {
    prefixes.forEach(SharedRedis::removePrefix);
    prefixes.clear();
  }
}
