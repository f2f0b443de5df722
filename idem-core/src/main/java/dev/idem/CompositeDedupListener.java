package dev.idem;

import java.util.List;
import java.util.function.Consumer;

/** Calls several listeners in order; a failing listener does not stop the others. */
final class CompositeDedupListener implements DedupListener {
  private final List<DedupListener> listeners;

  CompositeDedupListener(List<DedupListener> listeners) {
    this.listeners = listeners;
  }

  private void each(Consumer<DedupListener> call) {
    for (DedupListener l : listeners) {
      try {
        call.accept(l);
      } catch (RuntimeException ignored) {
        // A listener must never break deduplication.
      }
    }
  }

  @Override
  public void onPass(Scope scope, DedupKey key) {
    each(l -> l.onPass(scope, key));
  }

  @Override
  public void onDuplicate(Scope scope, DedupKey key) {
    each(l -> l.onDuplicate(scope, key));
  }

  @Override
  public void onInFlight(Scope scope, DedupKey key) {
    each(l -> l.onInFlight(scope, key));
  }

  @Override
  public void onConflict(Scope scope, DedupKey key) {
    each(l -> l.onConflict(scope, key));
  }

  @Override
  public void onCommitted(Scope scope, DedupKey key) {
    each(l -> l.onCommitted(scope, key));
  }

  @Override
  public void onReleased(Scope scope, DedupKey key) {
    each(l -> l.onReleased(scope, key));
  }

  @Override
  public void onLeaseLost(Scope scope, DedupKey key) {
    each(l -> l.onLeaseLost(scope, key));
  }

  @Override
  public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
    each(l -> l.onExpired(scope, key, leaseExpired));
  }

  @Override
  public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
    each(l -> l.onEvicted(scope, key, beforeTtl));
  }
}
