package dev.idem;

/**
 * What {@link Deduplicator#runOnce} did.
 *
 * @param <T> the work's result type
 */
public sealed interface RunResult<T> permits RunResult.Ran, RunResult.Replayed, RunResult.Skipped {

  /**
   * The key was new: the work ran and returned.
   *
   * @param value what the work returned
   * @param settlement how the reservation was settled: {@link Settlement#COMMITTED}, or {@link
   *     Settlement#LEASE_LOST} if the work outlasted the lease
   * @param <T> the result type
   */
  record Ran<T>(T value, Settlement settlement) implements RunResult<T> {}

  /**
   * The key was a duplicate with a stored result (replay mode): the work did not run.
   *
   * @param value the decoded stored result
   * @param <T> the result type
   */
  record Replayed<T>(T value) implements RunResult<T> {}

  /**
   * The work did not run: a duplicate without a stored result, in flight, or a conflict.
   *
   * @param decision why
   * @param <T> the result type
   */
  record Skipped<T>(Decision decision) implements RunResult<T> {}
}
