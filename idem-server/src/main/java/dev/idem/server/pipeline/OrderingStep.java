package dev.idem.server.pipeline;

import org.jspecify.annotations.Nullable;

/** A pipeline's ordering step: events with the same ordering key pass one at a time. */
public interface OrderingStep {

  /**
   * Waits until the event may proceed (strict) or proceeds at once (best effort), holding its
   * ordering key until the returned handle is closed. An event without an ordering key (the field
   * is missing or blank) is not ordered with any other event and proceeds at once.
   *
   * @param request the event
   * @return the held turn, to close when the event is delivered or given up; null if the event has
   *     no ordering key
   */
  @Nullable Turn enter(InboundRequest request);

  /** A held turn on one ordering key. */
  interface Turn extends AutoCloseable {
    /**
     * Returns the ordering key, as passed downstream to order asynchronous deliveries.
     *
     * @return the key's text form
     */
    String key();

    /**
     * Returns the fence of the lock this turn holds across instances (sent downstream as {@code
     * Idem-Fence}, so a redelivery after an owner died is recognisable), or null for a turn that
     * holds no shared lock.
     *
     * @return the fence token, or null
     */
    default @Nullable String fence() {
      return null;
    }

    /**
     * Whether the shared lock this turn holds has run out or was taken over (a renewal found it
     * lost): another instance may now deliver this key's events, so this turn must not deliver.
     * Always false for a turn that holds no shared lock.
     *
     * @param nowMillis the wall clock, in milliseconds since the epoch
     * @return true if the turn no longer holds its key across instances
     */
    default boolean lockLost(long nowMillis) {
      return false;
    }

    /** Gives the turn to the next event with the same key. */
    @Override
    void close();
  }
}
