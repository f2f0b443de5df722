package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.List;

/**
 * The model of one scope of the memory store as it is split into stripes: one {@link
 * ReferenceScope} (a plain LRU) per stripe, keys routed with the store's own stripe function.
 */
final class ReferenceStripes {
  private final ReferenceScope[] stripes;
  private final int mask;

  /** Events of every stripe, in the form of {@link ReferenceScope#events}. */
  final List<String> events = new ArrayList<>();

  /** Whether the last commit changed the key from in flight to committed. */
  boolean lastCommitChanged;

  ReferenceStripes(int maxKeys, int maxStripes) {
    int n = Stripes.count(maxKeys, maxStripes);
    stripes = new ReferenceScope[n];
    for (int i = 0; i < n; i++) {
      stripes[i] = new ReferenceScope(Stripes.bound(maxKeys, n, i));
    }
    mask = n - 1;
  }

  private ReferenceScope of(DedupKey k) {
    long h = Segment.hash(k.word(0), k.word(1), k.word(2), k.word(3));
    return stripes[Stripes.index(h, mask)];
  }

  private <T> T collect(ReferenceScope s, T result) {
    events.addAll(s.events);
    s.events.clear();
    return result;
  }

  ReserveResult reserve(ReserveRequest r) {
    ReferenceScope s = of(r.key());
    try {
      return collect(s, s.reserve(r));
    } finally {
      collect(s, null); // also when it threw: entries removed while making room are gone
    }
  }

  SettleResult commit(CommitRequest c) {
    ReferenceScope s = of(c.key());
    SettleResult r = s.commit(c);
    lastCommitChanged = s.lastCommitChanged;
    return collect(s, r);
  }

  SettleResult release(ReleaseRequest r) {
    return of(r.key()).release(r);
  }

  SettleResult extend(ExtendRequest e) {
    return of(e.key()).extend(e);
  }

  KeyState inspect(DedupKey k, long now) {
    return of(k).inspect(k, now);
  }

  boolean forget(DedupKey k) {
    return of(k).forget(k);
  }

  long clear() {
    long n = 0;
    for (ReferenceScope s : stripes) {
      n += s.clear();
    }
    return n;
  }

  long sweep(long now) {
    long n = 0;
    for (ReferenceScope s : stripes) {
      n += collect(s, s.sweep(now));
    }
    return n;
  }

  int size() {
    int n = 0;
    for (ReferenceScope s : stripes) {
      n += s.size();
    }
    return n;
  }

  List<DedupKey> keys() {
    List<DedupKey> keys = new ArrayList<>();
    for (ReferenceScope s : stripes) {
      keys.addAll(s.keys());
    }
    return keys;
  }
}
