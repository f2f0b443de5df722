package dev.idem.ordering;

import java.time.Duration;

/**
 * Hears when {@code lockTtl} ran out on a holder, for metrics and logs. Both methods have no-op
 * defaults. A gate calls them after the fact, outside its internal locks, on whichever thread
 * noticed (an arriving or releasing caller, or the gate's timer); keep them fast and never throw
 * (an exception is caught and ignored so a listener cannot break ordering).
 *
 * <p>Frequent {@link #onLockExpired} followed by {@link #onLateRelease} for the same holder means
 * {@code lockTtl} is shorter than processing takes: the holder was slow, not dead, and events of
 * its key ran concurrently. {@code onLockExpired} without a later {@code onLateRelease} means the
 * holder really died (or leaked its permit).
 */
public interface OrderingListener {

  /** A listener that does nothing. */
  OrderingListener NOOP = new OrderingListener() {};

  /**
   * A holder kept its key longer than {@code lockTtl}, was presumed dead and lost its turn: the
   * next event waiting for (or arriving at) the key was let through, or, if none was, the key was
   * freed.
   *
   * @param orderingKey the key
   * @param heldFor how long the presumed-dead holder had held the turn
   */
  default void onLockExpired(String orderingKey, Duration heldFor) {}

  /**
   * A holder released its turn after {@code lockTtl} had run out. If the turn had already been
   * taken over, the release changed nothing (it is fenced off from the successor's turn).
   *
   * @param orderingKey the key
   * @param heldFor how long the holder had held the turn when it released it
   */
  default void onLateRelease(String orderingKey, Duration heldFor) {}
}
