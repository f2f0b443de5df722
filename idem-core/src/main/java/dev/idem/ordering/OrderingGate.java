package dev.idem.ordering;

import dev.idem.IdemException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * Runs events that share an ordering key one at a time, in arrival order ({@link
 * OrderingMode#STRICT}), or lets them take the key's lock when it is free ({@link
 * OrderingMode#BEST_EFFORT}); events with different keys never wait for each other.
 *
 * <p>An event asks for its key's <em>turn</em> and gets a {@link Permit}; it runs while holding the
 * permit and closes it when done, which hands the turn to the next event with the key. Two forms
 * serve the two ways events are processed, and share one queue per key:
 *
 * <ul>
 *   <li>{@link #acquire(String)} blocks the calling thread until the turn comes, for handlers that
 *       own a thread per event (a webhook handler; on Java 21+ a virtual thread, which waits
 *       without holding a platform thread):
 *       <pre>{@code
 * try (Permit turn = gate.acquire(customerId)) {
 *   process(event);
 * }
 * }</pre>
 *   <li>{@link #acquireAsync(String)} returns at once with a future of the permit, for pipelines
 *       that must not block their thread (a Kafka consumer's poll loop); {@link #submit} wraps it
 *       so the permit is closed when the event's asynchronous work completes, whatever happens:
 *       <pre>{@code
 * gate.submit(customerId, () -> deliverAsync(record))
 *     .whenComplete((result, error) -> ackOrRetry(record, error));
 * }</pre>
 * </ul>
 *
 * <p>Nothing more is needed for either: a lock-style {@code tryAcquire} is what best-effort mode
 * is, and a timed acquire is {@code acquireAsync(key).orTimeout(..)}.
 *
 * <h2>Guarantees</h2>
 *
 * <ul>
 *   <li><b>Arrival order (strict).</b> An event <em>arrives</em> when {@code acquire} or {@code
 *       acquireAsync} is called; the gate puts concurrent arrivals for one key in a single order,
 *       and grants the key's turns in exactly that order (FIFO, no barging: an event arriving while
 *       others wait queues behind them even at the instant the turn changes hands).
 *   <li><b>Mutual exclusion (strict).</b> At most one permit per key is {@link Permit#held() held}
 *       at a time. A holder that keeps its key for {@code lockTtl} is presumed dead: the next event
 *       is let through (and {@link OrderingListener#onLockExpired} is reported), so if the holder
 *       was only slow, two events of the key then run concurrently. Set {@code lockTtl} above the
 *       longest processing time.
 *   <li><b>Fencing.</b> Closing a permit whose turn was taken over changes nothing; it never
 *       releases a successor's turn. Closing is idempotent.
 *   <li><b>Best effort.</b> {@code acquire} never waits: it returns an {@link Permit#exclusive()
 *       exclusive} permit if the key was free (or its holder past {@code lockTtl}), otherwise at
 *       once a non-exclusive one; nothing queues.
 *   <li><b>Withdrawal.</b> A waiter that is interrupted ({@code acquire}) or whose future is
 *       cancelled or completed by the caller before its turn came ({@code acquireAsync}, e.g. by
 *       {@code orTimeout}) leaves the queue: the events behind it keep their order, and if the turn
 *       reached it at that very moment it is passed on, never kept.
 *   <li><b>Closing.</b> {@link #close()} grants no more turns: waiters fail with {@link
 *       OrderingGateClosedException}, later calls too; holders keep running and may still close
 *       their permits.
 * </ul>
 *
 * <p>Permits are not reentrant: an event that asks for a key its own thread already holds waits
 * behind itself until {@code lockTtl} passes.
 *
 * <p>{@link LocalOrderingGate} orders events within one JVM. A distributed gate (a ticket lock in a
 * shared store) implements this same contract across instances and may additionally fail a call
 * with an {@link IdemException} such as {@link dev.idem.StoreUnavailableException} when its store
 * cannot answer. Implementations are thread-safe.
 */
public interface OrderingGate extends AutoCloseable {

  /**
   * Returns the mode and lock TTL this gate applies.
   *
   * @return the config
   */
  OrderingConfig config();

  /**
   * Waits for the key's turn and returns it. In strict mode, returns once every event that arrived
   * earlier for the key has released its turn or been presumed dead; in best-effort mode, returns
   * at once (see {@link Permit#exclusive()}). Close the permit when the event is done.
   *
   * @param orderingKey the key; not empty
   * @return the turn
   * @throws InterruptedException if the thread is interrupted before or while waiting (strict
   *     mode); the request is withdrawn and no turn is held
   * @throws OrderingGateClosedException if the gate is closed, or closes while waiting
   * @throws IllegalArgumentException if the key is empty
   */
  Permit acquire(String orderingKey) throws InterruptedException;

  /**
   * Asks for the key's turn without blocking. The request arrives (takes its place in the key's
   * queue) before this method returns; the future completes with the permit when the turn comes, or
   * exceptionally with {@link OrderingGateClosedException} if the gate closes first. If the turn is
   * free, the returned future is already complete; otherwise it is completed on the gate's
   * executor, never on the thread that released the previous turn.
   *
   * <p>Cancelling the future, or completing it yourself (e.g. {@code orTimeout}), before the turn
   * comes withdraws the request. Once the future has completed with a permit, close the permit.
   *
   * @param orderingKey the key; not empty
   * @return a future of the turn
   * @throws IllegalArgumentException if the key is empty
   */
  CompletableFuture<Permit> acquireAsync(String orderingKey);

  /**
   * Runs asynchronous work in the key's turn: asks for the turn ({@link #acquireAsync}), then calls
   * {@code task} and holds the turn until the stage it returns completes. The permit is closed in
   * every case (the task throws, returns null, or its stage fails), before the returned future
   * completes with the stage's outcome.
   *
   * <p>Cancelling the returned future before the turn comes withdraws the request and the task
   * never runs; once the task has started, cancelling does not stop it, and the turn is held until
   * its stage completes.
   *
   * @param orderingKey the key; not empty
   * @param task starts the event's work and returns its stage; called at most once: on the calling
   *     thread if the turn is free, otherwise on the thread that completes the permit's future
   * @param <T> the work's result type
   * @return the work's outcome; exceptional with {@link OrderingGateClosedException} if the gate
   *     closed before the turn came
   * @throws IllegalArgumentException if the key is empty
   */
  default <T> CompletableFuture<T> submit(
      String orderingKey, Supplier<? extends CompletionStage<T>> task) {
    Objects.requireNonNull(task, "task");
    CompletableFuture<Permit> turn = acquireAsync(orderingKey);
    CompletableFuture<T> result = new CompletableFuture<>();
    turn.whenComplete(
        (permit, failure) -> {
          if (failure != null) {
            result.completeExceptionally(failure);
            return;
          }
          if (result.isDone()) {
            permit.close(); // cancelled while the turn was being handed over
            return;
          }
          CompletionStage<T> work;
          try {
            work = Objects.requireNonNull(task.get(), "task returned null instead of a stage");
          } catch (Throwable t) {
            permit.close();
            result.completeExceptionally(t);
            return;
          }
          work.whenComplete(
              (value, error) -> {
                permit.close();
                if (error != null) {
                  result.completeExceptionally(error);
                } else {
                  result.complete(value);
                }
              });
        });
    if (!turn.isDone()) {
      result.whenComplete(
          (value, error) -> {
            if (result.isCancelled()) {
              turn.cancel(false);
            }
          });
    }
    return result;
  }

  /**
   * Closes the gate: it grants no more turns, every waiter fails with {@link
   * OrderingGateClosedException}, and so do later calls. Permits already granted stay valid until
   * closed. Idempotent.
   */
  @Override
  void close();
}
