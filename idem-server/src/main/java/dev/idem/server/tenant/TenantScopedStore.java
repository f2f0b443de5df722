package dev.idem.server.tenant;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
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
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A tenanted pipeline's view of its store: every operation on the pipeline's scope ({@code
 * <pipeline>/dedup}) goes to the scope of the key's tenant instead ({@link
 * TenantKeys#scopeOf(String, DedupKey)}, read from the tag in the key's last word), so each
 * tenant's keys live in a scope of their own and {@link #clearTenant(String)} is a plain scope
 * clear of the store. Operations on other scopes, and the outbox (one queue per pipeline), pass
 * through unchanged, as do batches (one store call, each request re-scoped).
 *
 * <p>A clear of the pipeline's scope itself is refused: the store cannot list the tenants, so clear
 * one tenant at a time. Closing this view closes nothing (the service closes the store). Every
 * method of {@link DedupStore} and {@link OutboxStore} is passed through, defaults included, so the
 * store's own batch forms are kept. Thread-safe.
 */
public final class TenantScopedStore implements DedupStore, OutboxStore {
  private final DedupStore store;
  private final Scope base;

  /**
   * Makes the view.
   *
   * @param store the pipeline's store
   * @param base the pipeline's scope, whose operations are re-scoped per tenant
   */
  public TenantScopedStore(DedupStore store, Scope base) {
    this.store = Objects.requireNonNull(store, "store");
    this.base = Objects.requireNonNull(base, "base");
  }

  /**
   * Forgets every key of one tenant, and nothing else.
   *
   * @param tenant the tenant
   * @return how many entries were removed, where the store can count them
   * @throws dev.idem.KeyDerivationException if the tenant is blank
   */
  public long clearTenant(String tenant) {
    return store.clear(TenantKeys.scopeOf(base.pipeline(), tenant));
  }

  /**
   * Returns the store behind this view.
   *
   * @return the store
   */
  public DedupStore store() {
    return store;
  }

  private Scope scope(Scope scope, DedupKey key) {
    return scope.equals(base) ? TenantKeys.scopeOf(base.pipeline(), key) : scope;
  }

  private ReserveRequest map(ReserveRequest r) {
    Scope s = scope(r.scope(), r.key());
    return s == r.scope()
        ? r
        : new ReserveRequest(
            s, r.key(), r.fingerprint(), r.token(), r.nowMillis(), r.leaseMillis(), r.ttl());
  }

  private CommitRequest map(CommitRequest r) {
    Scope s = scope(r.scope(), r.key());
    return s == r.scope()
        ? r
        : new CommitRequest(s, r.key(), r.token(), r.nowMillis(), r.ttl(), r.result());
  }

  private ReleaseRequest map(ReleaseRequest r) {
    Scope s = scope(r.scope(), r.key());
    return s == r.scope() ? r : new ReleaseRequest(s, r.key(), r.token(), r.nowMillis());
  }

  private ExtendRequest map(ExtendRequest r) {
    Scope s = scope(r.scope(), r.key());
    return s == r.scope()
        ? r
        : new ExtendRequest(s, r.key(), r.token(), r.nowMillis(), r.leaseMillis());
  }

  private OutboxStore outbox() {
    if (store instanceof OutboxStore o && store.capabilities().outbox()) {
      return o;
    }
    throw new IllegalStateException("the store " + store.describe() + " has no outbox");
  }

  @Override
  public ReserveResult reserve(ReserveRequest request) {
    return store.reserve(map(request));
  }

  @Override
  public SettleResult commit(CommitRequest request) {
    return store.commit(map(request));
  }

  @Override
  public CompletionStage<SettleResult> commitAsync(CommitRequest request) {
    try {
      return store.commitAsync(map(request));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public boolean commitsAsynchronously() {
    return store.commitsAsynchronously();
  }

  @Override
  public SettleResult release(ReleaseRequest request) {
    return store.release(map(request));
  }

  @Override
  public SettleResult extend(ExtendRequest request) {
    return store.extend(map(request));
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    return store.inspect(scope(scope, key), key, nowMillis);
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    return store.forget(scope(scope, key), key);
  }

  /**
   * Clears a scope; the pipeline's own scope cannot be cleared whole.
   *
   * @throws IdemConfigException for the pipeline's scope: clear one tenant ({@link #clearTenant})
   */
  @Override
  public long clear(Scope scope) {
    if (scope.equals(base)) {
      throw new IdemConfigException(
          "pipeline "
              + base.pipeline()
              + " keeps its keys per tenant; clear one tenant at a time (admin API:"
              + " DELETE /admin/pipelines/"
              + base.pipeline()
              + "/keys?tenant=<tenant>)");
    }
    return store.clear(scope);
  }

  @Override
  public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    return store.reserveAll(requests.stream().map(this::map).toList());
  }

  @Override
  public List<SettleResult> commitAll(List<CommitRequest> requests) {
    return store.commitAll(requests.stream().map(this::map).toList());
  }

  @Override
  public List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    return store.releaseAll(requests.stream().map(this::map).toList());
  }

  @Override
  public List<SettleResult> extendAll(List<ExtendRequest> requests) {
    return store.extendAll(requests.stream().map(this::map).toList());
  }

  @Override
  public long sweepExpired(long nowMillis) {
    return store.sweepExpired(nowMillis);
  }

  @Override
  public void checkHealth() {
    store.checkHealth();
  }

  @Override
  public StoreCapabilities capabilities() {
    return store.capabilities();
  }

  @Override
  public String describe() {
    return store.describe();
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    return outbox().commitAndEnqueue(map(commit), messages);
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, OutboxMessage message) {
    return outbox().commitAndEnqueue(map(commit), message);
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    return outbox().claim(queue, max, nowMillis, claimMillis);
  }

  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    return store instanceof OutboxStore o ? o.releaseClaimsOfEarlierRuns(queue) : 0;
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    return outbox().acknowledge(queue, id);
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    outbox().reschedule(queue, id, notBeforeMillis, error);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    outbox().deadLetter(queue, id, reason, nowMillis);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    return outbox().acknowledge(claimed);
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

  /** Closes nothing: the store belongs to the service. */
  @Override
  public void close() {}

  @Override
  public String toString() {
    return "TenantScopedStore[" + base + " on " + store.describe() + "]";
  }
}
