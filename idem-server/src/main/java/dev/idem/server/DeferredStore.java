package dev.idem.server;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A store that could not be reached when the service started (issue 9 §3): the service starts
 * anyway, and this stands in for the store until a background thread has opened it.
 *
 * <ol>
 *   <li>Until then, every operation (and {@code /health}) throws {@link StoreUnavailableException},
 *       so the pipelines on it answer {@code 503} with {@code Retry-After} and their outbox
 *       dispatchers retry; pipelines on other stores are not affected.
 *   <li>The opener runs every {@code retryEvery}; an error that is not "unavailable" (a wrong
 *       password, a refused Redis setting) is logged and retried too, since an operator may fix the
 *       server without restarting Idem.
 *   <li>Once open, every call goes to the real store.
 * </ol>
 *
 * <p>Its {@linkplain #capabilities() capabilities} are those the store type promises, known before
 * it opens. Thread-safe.
 */
public final class DeferredStore implements DedupStore, OutboxStore {
  private static final Logger LOG = LoggerFactory.getLogger(DeferredStore.class);

  private final String description;
  private final StoreCapabilities capabilities;
  private final Supplier<DedupStore> opener;
  private final ScheduledExecutorService retrier;
  private volatile @Nullable DedupStore store;
  private volatile String lastError;
  private volatile boolean closed;

  /**
   * Starts opening in the background.
   *
   * @param description what {@link #describe()} says until the store is open
   * @param capabilities what the store will be able to do
   * @param opener opens the store; throws while it cannot
   * @param firstError why the first attempt (at start) failed
   * @param retryEvery how long to wait between attempts
   */
  public DeferredStore(
      String description,
      StoreCapabilities capabilities,
      Supplier<DedupStore> opener,
      String firstError,
      Duration retryEvery) {
    this.description = Objects.requireNonNull(description, "description");
    this.capabilities = Objects.requireNonNull(capabilities, "capabilities");
    this.opener = Objects.requireNonNull(opener, "opener");
    this.lastError = firstError;
    this.retrier =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "idem-store-opener");
              t.setDaemon(true);
              return t;
            });
    long every = Math.max(1, retryEvery.toMillis());
    retrier.scheduleWithFixedDelay(this::tryOpen, every, every, TimeUnit.MILLISECONDS);
  }

  private void tryOpen() {
    if (store != null || closed) {
      return;
    }
    try {
      DedupStore opened = opener.get();
      synchronized (this) {
        if (closed) {
          opened.close();
          return;
        }
        store = opened;
      }
      LOG.info("store {} is reachable now and open; its pipelines are served", description);
      retrier.shutdown();
    } catch (RuntimeException e) {
      String error = String.valueOf(e.getMessage());
      if (!error.equals(lastError)) {
        LOG.warn("store {} still cannot be opened: {}", description, error);
      }
      lastError = error;
    }
  }

  /**
   * Returns the real store once it is open.
   *
   * @return the store, or null while it could not be opened
   */
  public @Nullable DedupStore opened() {
    return store;
  }

  private DedupStore open() {
    DedupStore s = store;
    if (s == null) {
      if (closed) {
        throw new IllegalStateException("the store " + description + " is closed");
      }
      throw new StoreUnavailableException(
          description,
          false,
          "the store "
              + description
              + " has not been reachable since the service started ("
              + lastError
              + "); Idem keeps trying to open it, retry later");
    }
    return s;
  }

  private OutboxStore outbox() {
    DedupStore s = open();
    if (s instanceof OutboxStore o && s.capabilities().outbox()) {
      return o;
    }
    throw new IllegalStateException("the store " + description + " has no outbox");
  }

  @Override
  public ReserveResult reserve(ReserveRequest request) {
    return open().reserve(request);
  }

  @Override
  public SettleResult commit(CommitRequest request) {
    return open().commit(request);
  }

  @Override
  public CompletionStage<SettleResult> commitAsync(CommitRequest request) {
    try {
      return open().commitAsync(request);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public boolean commitsAsynchronously() {
    DedupStore opened = store;
    return opened != null && opened.commitsAsynchronously();
  }

  @Override
  public SettleResult release(ReleaseRequest request) {
    return open().release(request);
  }

  @Override
  public SettleResult extend(ExtendRequest request) {
    return open().extend(request);
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    return open().inspect(scope, key, nowMillis);
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    return open().forget(scope, key);
  }

  @Override
  public long clear(Scope scope) {
    return open().clear(scope);
  }

  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    return open().reserveAll(requests);
  }

  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    return open().commitAll(requests);
  }

  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    return open().releaseAll(requests);
  }

  @Override
  public long sweepExpired(long nowMillis) {
    return open().sweepExpired(nowMillis);
  }

  @Override
  public void checkHealth() {
    open().checkHealth();
  }

  @Override
  public StoreCapabilities capabilities() {
    return capabilities;
  }

  @Override
  public String describe() {
    DedupStore s = store;
    return s == null ? description : s.describe();
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    return outbox().commitAndEnqueue(commit, messages);
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    return outbox().claim(queue, max, nowMillis, claimMillis);
  }

  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    // Only shared stores (Redis, JDBC) are deferred, and they release no claims at start.
    DedupStore s = store;
    return s instanceof OutboxStore o ? o.releaseClaimsOfEarlierRuns(queue) : 0;
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    return outbox().acknowledge(queue, id);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    return outbox().acknowledge(claimed);
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    outbox().reschedule(queue, id, notBeforeMillis, error);
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    return outbox().reschedule(claimed, notBeforeMillis, error);
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    return outbox().deadLetter(claimed, reason, nowMillis);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    outbox().deadLetter(queue, id, reason, nowMillis);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    return outbox().deadLetters(queue, limit);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    return outbox().deadLetters(queue, query);
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    return outbox().findDeadLetter(queue, id);
  }

  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    return outbox().requeueDeadLetter(queue, id, nowMillis);
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    return outbox().purgeDeadLetter(queue, id);
  }

  @Override
  public long purgeDeadLetters(String queue) {
    return outbox().purgeDeadLetters(queue);
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    return outbox().pending(queue, limit);
  }

  @Override
  public long depth(String queue) {
    return outbox().depth(queue);
  }

  /** Stops opening, and closes the store if it was opened. */
  @Override
  public void close() {
    DedupStore s;
    synchronized (this) {
      closed = true;
      s = store;
    }
    retrier.shutdownNow();
    if (s != null) {
      s.close();
    }
  }

  @Override
  public String toString() {
    return "DeferredStore[" + describe() + (store == null ? ", not open" : "") + "]";
  }
}
