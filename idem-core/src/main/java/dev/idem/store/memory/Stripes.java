package dev.idem.store.memory;

import dev.idem.Scope;

/**
 * One scope's keys, split by key hash into independent {@link Segment}s (stripes), each with its
 * own lock, hash table and LRU list, so that threads working on different keys of one scope rarely
 * touch the same lock or cache lines. A scope whose bound is below {@value #MIN_KEYS_PER_STRIPE}
 * times two is one stripe (its eviction order is exactly LRU over the scope); larger scopes get up
 * to {@value #MAX_STRIPES} stripes of at least {@value #MIN_KEYS_PER_STRIPE} keys, whose bounds add
 * up to the scope's exactly.
 */
final class Stripes {
  /** The fewest keys a stripe holds: below this, a scope is not split. */
  static final int MIN_KEYS_PER_STRIPE = 512;

  /** The most stripes a scope is split into. */
  static final int MAX_STRIPES = 16;

  final Scope scope;
  private final Segment[] segments;
  private final int mask;

  /** Set (before the stripes are retired) by clear and close; a racy read only decides caching. */
  volatile boolean retired;

  Stripes(Scope scope, int maxKeys, int maxStripes, boolean reporting) {
    this.scope = scope;
    int n = count(maxKeys, maxStripes);
    this.segments = new Segment[n];
    this.mask = n - 1;
    for (int i = 0; i < n; i++) {
      segments[i] = new Segment(scope, bound(maxKeys, n, i), maxKeys, n, reporting);
    }
  }

  /**
   * How many stripes a scope bounded to {@code maxKeys} is split into: a power of two, at most
   * {@code maxStripes} (normally {@link #MAX_STRIPES}; tests pass 1 to get one large stripe).
   */
  static int count(int maxKeys, int maxStripes) {
    return Integer.highestOneBit(Math.max(1, Math.min(maxStripes, maxKeys / MIN_KEYS_PER_STRIPE)));
  }

  /**
   * Returns the stripe of a key hash. Uses bits 20 to 23 of the hash: the stripe's own hash table
   * indexes by the top bits, so the two choices stay independent.
   */
  Segment of(long h) {
    return segments[index(h, mask)];
  }

  /** Returns the stripe index of a key hash among {@code mask + 1} stripes. */
  static int index(long h, int mask) {
    return (int) (h >>> 20) & mask;
  }

  /** Returns the bound of stripe {@code i} of {@code n} in a scope bounded to {@code maxKeys}. */
  static int bound(int maxKeys, int n, int i) {
    return maxKeys / n + (i < maxKeys % n ? 1 : 0);
  }

  Segment[] all() {
    return segments;
  }
}
