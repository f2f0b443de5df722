package dev.idem.server.deliver;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The outbox of a real dedup store, filled the way the service fills it: reserve a new key, then
 * commit it and append the message in one {@code commitAndEnqueue}.
 */
final class DedupStoreOutbox<S extends DedupStore & OutboxStore>
    implements OutboxDispatcherContract.TestOutbox {
  private static final Scope SCOPE = Scope.of(OutboxDispatcherContract.QUEUE);
  private static final AtomicLong KEYS = new AtomicLong();

  private final S store;
  private final ManualTimeSource clock;
  private final Runnable cleanup;

  DedupStoreOutbox(S store, ManualTimeSource clock, Runnable cleanup) {
    this.store = store;
    this.clock = clock;
    this.cleanup = cleanup;
  }

  @Override
  public OutboxStore store() {
    return store;
  }

  @Override
  public void enqueue(String queue, byte[] payload) {
    enqueue(queue, payload, null);
  }

  @Override
  public void enqueue(String queue, byte[] payload, @Nullable String orderingKey) {
    long n = KEYS.incrementAndGet();
    DedupKey key = DedupKey.ofWords(n, System.nanoTime(), 0, 0);
    long now = clock.wallMillis();
    Ttl ttl = new Ttl(3_600_000, Expiry.SLIDING);
    ReserveResult reserved =
        store.reserve(new ReserveRequest(SCOPE, key, null, n, now, 60_000, ttl));
    if (!(reserved instanceof ReserveResult.Acquired acquired)) {
      throw new AssertionError("a new key was not acquired: " + reserved);
    }
    SettleResult result =
        store.commitAndEnqueue(
            new CommitRequest(SCOPE, key, acquired.token(), now, ttl, null),
            new OutboxMessage(queue, key, payload, orderingKey));
    if (result != SettleResult.APPLIED) {
      throw new AssertionError("commitAndEnqueue was " + result);
    }
  }

  @Override
  public void close() {
    try {
      store.close();
    } finally {
      cleanup.run();
    }
  }
}
