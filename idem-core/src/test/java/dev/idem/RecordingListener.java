package dev.idem;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Records every event as {@code "<event> <key hex prefix>"}, e.g. {@code "pass 1a2b3c4d"}. */
final class RecordingListener implements DedupListener {
  final List<String> events = new CopyOnWriteArrayList<>();

  static String id(DedupKey key) {
    return key.toHex().substring(0, 8);
  }

  @Override
  public void onPass(Scope scope, DedupKey key) {
    events.add("pass " + id(key));
  }

  @Override
  public void onDuplicate(Scope scope, DedupKey key) {
    events.add("duplicate " + id(key));
  }

  @Override
  public void onInFlight(Scope scope, DedupKey key) {
    events.add("inFlight " + id(key));
  }

  @Override
  public void onConflict(Scope scope, DedupKey key) {
    events.add("conflict " + id(key));
  }

  @Override
  public void onCommitted(Scope scope, DedupKey key) {
    events.add("committed " + id(key));
  }

  @Override
  public void onReleased(Scope scope, DedupKey key) {
    events.add("released " + id(key));
  }

  @Override
  public void onLeaseLost(Scope scope, DedupKey key) {
    events.add("leaseLost " + id(key));
  }

  @Override
  public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
    events.add((leaseExpired ? "leaseExpired " : "keyExpired ") + id(key));
  }

  @Override
  public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
    events.add("evicted " + id(key));
  }
}
