package dev.idem;

/**
 * A piece of work run at most once per key by {@link Deduplicator#runOnce}.
 *
 * @param <T> what the work returns
 * @param <E> the checked exception it may throw ({@link RuntimeException} if none)
 */
@FunctionalInterface
public interface Work<T, E extends Exception> {
  /**
   * Does the work.
   *
   * @return its result
   * @throws E if it fails; the reservation is then released
   */
  T run() throws E;
}
