package dev.idem.store.redis;

import dev.idem.TimeSource;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreCapabilities;
import dev.idem.tck.DedupStoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/**
 * The store contract suite against the shared Redis ({@code IDEM_REDIS_URL}, default
 * 127.0.0.1:6379). Each store gets a random prefix; after each test its keys are removed with SCAN
 * + UNLINK of that prefix (never FLUSHDB: the server is shared). {@code reopen} closes the store
 * and opens a new one on the same Redis and prefix, as a restarted instance would.
 */
class RedisDedupStoreContractTest extends DedupStoreContract {
  private final List<String> prefixes = new ArrayList<>();

  @Override // durable, native expiry, outbox
  protected StoreCapabilities expectedCapabilities() {
    return new StoreCapabilities(false, true, true, true);
  }

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

  /** A long command timeout: the suite checks behaviour, not speed, on a shared machine. */
  private static RedisDedupStore open(String prefix) {
    return RedisDedupStore.builder(SharedRedis.client())
        .prefix(prefix)
        .commandTimeout(Duration.ofSeconds(15))
        .build();
  }

  @AfterEach
  void removeKeys() {
    prefixes.forEach(SharedRedis::removePrefix);
    prefixes.clear();
  }
}
