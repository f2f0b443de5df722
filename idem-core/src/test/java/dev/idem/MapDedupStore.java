package dev.idem;

import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small correct store for the facade's tests: {@link DedupStateMachine} over a map under one
 * lock. It also counts the calls it gets, so tests can see batching.
 */
class MapDedupStore implements DedupStore {
  private record Slot(Scope scope, DedupKey key) {}

  private final Map<Slot, StoredEntry> entries = new HashMap<>();
  final List<String> calls = new ArrayList<>();

  @Override
  public synchronized ReserveResult reserve(ReserveRequest r) {
    calls.add("reserve");
    Slot s = new Slot(r.scope(), r.key());
    Transition<ReserveResult> t = DedupStateMachine.reserve(entries.get(s), r);
    write(s, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult commit(CommitRequest c) {
    calls.add("commit");
    Slot s = new Slot(c.scope(), c.key());
    Transition<SettleResult> t = DedupStateMachine.commit(entries.get(s), c);
    write(s, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult extend(ExtendRequest r) {
    calls.add("extend");
    Slot s = new Slot(r.scope(), r.key());
    Transition<SettleResult> t = DedupStateMachine.extend(entries.get(s), r);
    write(s, t);
    return t.answer();
  }

  @Override
  public synchronized SettleResult release(ReleaseRequest r) {
    calls.add("release");
    Slot s = new Slot(r.scope(), r.key());
    Transition<SettleResult> t = DedupStateMachine.release(entries.get(s), r);
    write(s, t);
    return t.answer();
  }

  @Override
  public synchronized List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    calls.add("reserveAll");
    List<ReserveResult> out = new ArrayList<>();
    for (ReserveRequest r : requests) {
      Slot s = new Slot(r.scope(), r.key());
      Transition<ReserveResult> t = DedupStateMachine.reserve(entries.get(s), r);
      write(s, t);
      out.add(t.answer());
    }
    return out;
  }

  @Override
  public synchronized List<SettleResult> commitAll(List<CommitRequest> requests) {
    calls.add("commitAll");
    List<SettleResult> out = new ArrayList<>();
    for (CommitRequest c : requests) {
      Slot s = new Slot(c.scope(), c.key());
      Transition<SettleResult> t = DedupStateMachine.commit(entries.get(s), c);
      write(s, t);
      out.add(t.answer());
    }
    return out;
  }

  private void write(Slot s, Transition<?> t) {
    if (!t.changed()) {
      return;
    }
    if (t.next() == null) {
      entries.remove(s);
    } else {
      entries.put(s, t.next());
    }
  }

  @Override
  public synchronized KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    return DedupStateMachine.inspect(entries.get(new Slot(scope, key)), nowMillis);
  }

  @Override
  public synchronized boolean forget(Scope scope, DedupKey key) {
    return entries.remove(new Slot(scope, key)) != null;
  }

  @Override
  public synchronized long clear(Scope scope) {
    long before = entries.size();
    entries.keySet().removeIf(s -> s.scope().equals(scope));
    return before - entries.size();
  }

  @Override
  public StoreCapabilities capabilities() {
    return new StoreCapabilities(false, false, false, false);
  }

  @Override
  public String describe() {
    return "map";
  }

  @Override
  public void close() {}
}
