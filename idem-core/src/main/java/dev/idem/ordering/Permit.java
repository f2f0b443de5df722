package dev.idem.ordering;

/**
 * One event's turn on its ordering key, from {@link OrderingGate#acquire} or {@link
 * OrderingGate#acquireAsync}. Run the event while holding it, then {@link #close()} it, in a {@code
 * try}-with-resources block or when the event's work completes: closing releases the turn to the
 * next event with the same key.
 *
 * <p>A permit is <em>fenced</em>: once it has held the turn for {@code lockTtl} it is presumed dead
 * and the next event may take the turn over, after which closing this permit changes nothing (it
 * cannot release the successor's turn). Closing is idempotent and may happen on any thread.
 *
 * <p>A best-effort gate that found the key busy hands out a permit that is not {@link
 * #exclusive()}: the event proceeds without the lock, and closing it does nothing.
 *
 * <p>Thread-safe.
 */
public interface Permit extends AutoCloseable {

  /**
   * Returns the ordering key this permit is a turn on.
   *
   * @return the key
   */
  String orderingKey();

  /**
   * Returns whether this permit was granted the key's turn exclusively. Always true in {@link
   * OrderingMode#STRICT}; in {@link OrderingMode#BEST_EFFORT}, false when the key was held by
   * another event and this one proceeded without the lock.
   *
   * @return true if the permit was granted the turn
   */
  boolean exclusive();

  /**
   * Returns whether this permit holds its key's turn right now: it is exclusive, not closed, and
   * less than {@code lockTtl} has passed since it was granted (so it has not been, and cannot yet
   * be, taken over). A long-running event may check this before an irreversible step; the answer
   * can turn false at any moment after it was given, so it is advice, not a lock.
   *
   * @return true while the turn is held
   */
  boolean held();

  /**
   * Releases the turn to the next event with the same key. Idempotent: only the first call acts. If
   * the turn was already taken over after {@code lockTtl}, changes nothing. Never throws.
   */
  @Override
  void close();
}
