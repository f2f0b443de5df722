package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;

/**
 * The suite on a store with no optional capability (not bounded, not durable, no outbox, no native
 * expiry, only the single forms): the optional groups skip with their reason and never call {@link
 * #newBoundedStore} or {@link #reopen}, and the default batch forms of {@link DedupStore} pass.
 */
class ReferenceStoreWithoutCapabilitiesContractTest extends DedupStoreContract {

  @Override
  protected StoreCapabilities expectedCapabilities() {
    return new StoreCapabilities(false, false, false, false);
  }

  @Override
  protected DedupStore newStore(TimeSource time) {
    return new Plain(
        new ReferenceStore(new ReferenceStore.Storage(), Integer.MAX_VALUE, ReferenceStore.all()));
  }

  /** Only the abstract methods of DedupStore, delegated; no OutboxStore. */
  private static final class Plain implements DedupStore {
    private final ReferenceStore delegate;

    Plain(ReferenceStore delegate) {
      this.delegate = delegate;
    }

    @Override
    public ReserveResult reserve(ReserveRequest request) {
      return delegate.reserve(request);
    }

    @Override
    public SettleResult commit(CommitRequest request) {
      return delegate.commit(request);
    }

    @Override
    public SettleResult extend(ExtendRequest request) {
      return delegate.extend(request);
    }

    @Override
    public SettleResult release(ReleaseRequest request) {
      return delegate.release(request);
    }

    @Override
    public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
      return delegate.inspect(scope, key, nowMillis);
    }

    @Override
    public boolean forget(Scope scope, DedupKey key) {
      return delegate.forget(scope, key);
    }

    @Override
    public long clear(Scope scope) {
      return delegate.clear(scope);
    }

    @Override
    public long sweepExpired(long nowMillis) {
      return delegate.sweepExpired(nowMillis);
    }

    @Override
    public StoreCapabilities capabilities() {
      return new StoreCapabilities(false, false, false, false);
    }

    @Override
    public String describe() {
      return "reference:plain";
    }

    @Override
    public void close() {
      delegate.close();
    }
  }
}
