package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoredEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The simplest possible model of one scope of the memory store: {@link DedupStateMachine} over a
 * {@link HashMap}, an access-ordered {@link LinkedHashMap} for the recency of committed keys, an
 * insertion-ordered one for reservations, and the documented eviction order written out plainly.
 */
final class ReferenceScope {
  private final int maxKeys;
  private final Map<DedupKey, StoredEntry> entries = new HashMap<>();
  private final LinkedHashMap<DedupKey, Boolean> committedLru =
      new LinkedHashMap<>(16, 0.75f, true);
  private final LinkedHashMap<DedupKey, Boolean> reservations = new LinkedHashMap<>();

  /** Events in the form "evicted KEY beforeTtl" / "expired KEY lease". */
  final List<String> events = new ArrayList<>();

  ReferenceScope(int maxKeys) {
    this.maxKeys = maxKeys;
  }

  ReserveResult reserve(ReserveRequest r) {
    DedupKey k = r.key();
    StoredEntry current = entries.get(k);
    Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
    if (t.answer() instanceof ReserveResult.Acquired) {
      if (current == null) {
        if (entries.size() >= maxKeys) {
          makeRoom(r.nowMillis());
        }
      } else {
        committedLru.remove(k);
        reservations.remove(k);
      }
      entries.put(k, t.next());
      reservations.put(k, Boolean.TRUE);
    } else if (t.answer() instanceof ReserveResult.Duplicate) {
      entries.put(k, t.next());
      committedLru.get(k); // a duplicate hit is a use
    }
    return t.answer();
  }

  /** Whether the last commit changed the key from in flight to committed. */
  boolean lastCommitChanged;

  SettleResult commit(CommitRequest c) {
    DedupKey k = c.key();
    Transition<SettleResult> t = DedupStateMachine.commit(entries.get(k), c);
    lastCommitChanged = t.changed();
    if (t.changed()) {
      entries.put(k, t.next());
      reservations.remove(k);
      committedLru.put(k, Boolean.TRUE);
    }
    return t.answer();
  }

  SettleResult release(ReleaseRequest r) {
    DedupKey k = r.key();
    Transition<SettleResult> t = DedupStateMachine.release(entries.get(k), r);
    if (t.changed()) {
      remove(k);
    }
    return t.answer();
  }

  SettleResult extend(ExtendRequest e) {
    DedupKey k = e.key();
    Transition<SettleResult> t = DedupStateMachine.extend(entries.get(k), e);
    if (t.changed()) {
      entries.put(k, t.next());
      reservations.remove(k); // a renewed reservation goes to the end of the in-flight order
      reservations.put(k, Boolean.TRUE);
    }
    return t.answer();
  }

  KeyState inspect(DedupKey k, long now) {
    return DedupStateMachine.inspect(entries.get(k), now);
  }

  boolean forget(DedupKey k) {
    return remove(k) != null;
  }

  long clear() {
    int n = entries.size();
    entries.clear();
    committedLru.clear();
    reservations.clear();
    return n;
  }

  long sweep(long now) {
    List<DedupKey> dead = new ArrayList<>();
    entries.forEach(
        (k, e) -> {
          if (e.isDeadAt(now)) {
            dead.add(k);
          }
        });
    for (DedupKey k : dead) {
      StoredEntry e = remove(k);
      events.add("expired " + k + " " + (e.state() == StoredEntry.State.IN_FLIGHT));
    }
    return dead.size();
  }

  int size() {
    return entries.size();
  }

  List<DedupKey> keys() {
    return new ArrayList<>(entries.keySet());
  }

  private void makeRoom(long now) {
    DedupKey c = first(committedLru);
    if (c != null && entries.get(c).isDeadAt(now)) {
      remove(c);
      events.add("evicted " + c + " false");
      return;
    }
    DedupKey f = first(reservations);
    if (f != null && entries.get(f).isDeadAt(now)) {
      remove(f);
      events.add("expired " + f + " true");
      return;
    }
    if (sweep(now) > 0) {
      return;
    }
    c = first(committedLru);
    if (c == null) {
      throw new StoreException("full of in-flight reservations");
    }
    StoredEntry e = remove(c);
    events.add("evicted " + c + " " + (e.deadlineMillis() != Long.MAX_VALUE));
  }

  private StoredEntry remove(DedupKey k) {
    committedLru.remove(k);
    reservations.remove(k);
    return entries.remove(k);
  }

  private static DedupKey first(LinkedHashMap<DedupKey, Boolean> m) {
    Iterator<DedupKey> it = m.keySet().iterator();
    return it.hasNext() ? it.next() : null;
  }
}
