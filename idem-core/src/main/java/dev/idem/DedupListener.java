package dev.idem;

import java.util.List;

/**
 * Hears every dedup event, for metrics and logs. All methods have no-op defaults; implement the
 * ones you need. Called on the thread that caused the event, after the store answered; keep them
 * fast and never throw (an exception is caught and ignored so a listener cannot break
 * deduplication).
 */
public interface DedupListener {

  /** A listener that does nothing. */
  DedupListener NOOP = new DedupListener() {};

  /**
   * A new key was reserved: the event passes.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onPass(Scope scope, DedupKey key) {}

  /**
   * A duplicate was suppressed.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onDuplicate(Scope scope, DedupKey key) {}

  /**
   * An event was turned away because its key is in flight.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onInFlight(Scope scope, DedupKey key) {}

  /**
   * A key was reused with a different payload.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onConflict(Scope scope, DedupKey key) {}

  /**
   * A reservation was committed.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onCommitted(Scope scope, DedupKey key) {}

  /**
   * A reservation was released.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onReleased(Scope scope, DedupKey key) {}

  /**
   * A commit or release changed nothing because the lease had run out.
   *
   * @param scope the scope
   * @param key the key
   */
  default void onLeaseLost(Scope scope, DedupKey key) {}

  /**
   * An entry expired: a lease ran out with no settlement, or a committed key's TTL passed. The
   * {@link Deduplicator} reports it when a reserve takes such an entry over; stores without native
   * expiry may also report it from a sweep, through the listener given to their builder.
   *
   * @param scope the scope
   * @param key the key
   * @param leaseExpired true for a lease (its holder crashed or was too slow), false for a TTL
   */
  default void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {}

  /**
   * A committed key was evicted to stay within {@code maxKeys}. Only stores report this (through
   * the listener given to the store's builder, e.g. the memory store's), never the {@link
   * Deduplicator}.
   *
   * @param scope the scope
   * @param key the key
   * @param beforeTtl true if its TTL had not run out yet: the window is larger than {@code maxKeys}
   *     can hold, and a late duplicate of it will pass as new (false for keys with no TTL, whose
   *     expected end is eviction)
   */
  default void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {}

  /**
   * Returns a listener that calls each of {@code listeners} in order, isolating their failures.
   *
   * @param listeners the listeners
   * @return the combined listener
   */
  static DedupListener all(List<DedupListener> listeners) {
    List<DedupListener> copy = List.copyOf(listeners);
    if (copy.isEmpty()) {
      return NOOP;
    }
    return new CompositeDedupListener(copy);
  }
}
