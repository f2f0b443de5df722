package dev.idem.spi;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What a dedup store implements: the lifecycle of DESIGN §3, each operation one atomic step in the
 * store (one Lua script, one SQL statement or transaction, one write batch under the key's lock).
 * Reserve is a single conditional call that returns the outcome; there is no contains-then-add.
 *
 * <p>The reference semantics are {@link DedupStateMachine}: a store either applies it under a lock
 * or implements the same transitions natively, and the contract suite ({@code idem-store-tck})
 * checks both the same way. Times are the caller's ({@code nowMillis} in each request).
 *
 * <p>Thread-safe: every method may be called from many threads. Failures are exceptions of one
 * hierarchy: {@link StoreUnavailableException} when the store could not answer (retryable; its
 * {@code outcomeUnknown} says whether the command may have been applied), {@link
 * dev.idem.StoreException} when it answered with something unusable.
 */
public interface DedupStore extends AutoCloseable {

  /**
   * Reserves a key, atomically: ACQUIRED, DUPLICATE (refreshing a sliding TTL), IN_FLIGHT or
   * CONFLICT, as {@link DedupStateMachine#reserve} defines.
   *
   * @param request what to reserve
   * @return the outcome
   * @throws StoreUnavailableException if the store did not answer
   */
  ReserveResult reserve(ReserveRequest request);

  /**
   * Commits a reservation if {@code token} still holds it.
   *
   * @param request what to commit
   * @return {@link SettleResult#APPLIED} or {@link SettleResult#STALE}
   * @throws StoreUnavailableException if the store did not answer
   */
  SettleResult commit(CommitRequest request);

  /**
   * Commits a reservation like {@link #commit}, without making the caller wait for the commit to
   * become durable: the returned stage completes (on a thread of the store's choosing) once the
   * commit is as durable as {@link #commit}'s return would make it, or exceptionally with a {@link
   * StoreUnavailableException} if it could not be written. Until then, the key must not read as
   * committed to anyone (a store may make other steps on the key wait, or answer them in flight).
   * Dependent stages may run on the store's writing thread, so they must not block.
   *
   * <p>The default calls {@link #commit} and completes before it returns.
   *
   * @param request what to commit
   * @return completes with {@link SettleResult#APPLIED} or {@link SettleResult#STALE}
   */
  default CompletionStage<SettleResult> commitAsync(CommitRequest request) {
    try {
      return CompletableFuture.completedFuture(commit(request));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Whether {@link #commitAsync} returns before the commit is durable, so that a caller gains by
   * not waiting for it (RocksDB under group commit). False for the default {@code commitAsync},
   * which commits before it returns: a caller then commits with {@link #commit} and skips the
   * stage.
   *
   * @return true if {@code commitAsync} completes later than it returns
   */
  default boolean commitsAsynchronously() {
    return false;
  }

  /**
   * Releases a reservation if {@code token} still holds it.
   *
   * @param request what to release
   * @return {@link SettleResult#APPLIED} or {@link SettleResult#STALE}
   * @throws StoreUnavailableException if the store did not answer
   */
  SettleResult release(ReleaseRequest request);

  /**
   * Renews a reservation's lease if {@code token} still holds it, as {@link
   * DedupStateMachine#extend} defines: the key must be in flight under the token with its lease
   * running at {@code nowMillis}; the deadline becomes the later of the current one and {@code
   * nowMillis + leaseMillis}. A lapsed, taken-over, released or committed reservation answers
   * {@link SettleResult#STALE} and nothing changes.
   *
   * @param request what to extend
   * @return {@link SettleResult#APPLIED} or {@link SettleResult#STALE}
   * @throws StoreUnavailableException if the store did not answer
   */
  SettleResult extend(ExtendRequest request);

  /**
   * Returns a key's state at {@code nowMillis} without changing it (a sliding TTL is not
   * refreshed). Expired entries read as absent.
   *
   * @param scope the scope
   * @param key the key
   * @param nowMillis the caller's wall-clock time
   * @return the state
   */
  KeyState inspect(Scope scope, DedupKey key, long nowMillis);

  /**
   * Removes a key whatever its state (admin): the next event with it is new. An in-flight holder's
   * later commit or release then answers {@link SettleResult#STALE}.
   *
   * @param scope the scope
   * @param key the key
   * @return whether there was an entry to remove (an expired entry not yet swept counts)
   */
  boolean forget(Scope scope, DedupKey key);

  /**
   * Removes every key of one scope, and nothing of any other scope.
   *
   * @param scope the scope
   * @return exactly how many entries (in flight or committed, dead or alive) were removed
   */
  long clear(Scope scope);

  /**
   * Reserves many keys, each atomically (the batch as a whole is not atomic), in as few round trips
   * as the store allows. The default calls {@link #reserve} in a loop.
   *
   * @param requests the reservations
   * @return one outcome per request, in order
   */
  default List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
    List<ReserveResult> out = new ArrayList<>(requests.size());
    for (ReserveRequest r : requests) {
      out.add(reserve(r));
    }
    return out;
  }

  /**
   * Commits many reservations, each atomically. The default calls {@link #commit} in a loop.
   *
   * @param requests the commits
   * @return one result per request, in order
   */
  default List<SettleResult> commitAll(List<CommitRequest> requests) {
    List<SettleResult> out = new ArrayList<>(requests.size());
    for (CommitRequest r : requests) {
      out.add(commit(r));
    }
    return out;
  }

  /**
   * Releases many reservations, each atomically. The default calls {@link #release} in a loop.
   *
   * @param requests the releases
   * @return one result per request, in order
   */
  default List<SettleResult> releaseAll(List<ReleaseRequest> requests) {
    List<SettleResult> out = new ArrayList<>(requests.size());
    for (ReleaseRequest r : requests) {
      out.add(release(r));
    }
    return out;
  }

  /**
   * Extends many reservations, each atomically. The default calls {@link #extend} in a loop.
   *
   * @param requests the extensions
   * @return one result per request, in order
   */
  default List<SettleResult> extendAll(List<ExtendRequest> requests) {
    List<SettleResult> out = new ArrayList<>(requests.size());
    for (ExtendRequest r : requests) {
      out.add(extend(r));
    }
    return out;
  }

  /**
   * Removes entries that are dead at {@code nowMillis} (their lease or TTL deadline is at or before
   * it), for stores without native expiry (see {@link StoreCapabilities#nativeExpiry()}); never a
   * live entry. Correctness never depends on it: dead entries already read as absent; sweeping only
   * returns their space.
   *
   * @param nowMillis the caller's wall-clock time
   * @return how many entries were removed
   */
  default long sweepExpired(long nowMillis) {
    return 0;
  }

  /**
   * Checks that the store answers (for {@code /health}).
   *
   * @throws StoreUnavailableException if it does not
   */
  default void checkHealth() {}

  /**
   * Returns what this store can do beyond the contract.
   *
   * @return the capability flags
   */
  StoreCapabilities capabilities();

  /**
   * Returns a short description for logs and error messages, e.g. {@code
   * rocksdb:/var/lib/idem/data}. Never contains a password.
   *
   * @return the description
   */
  String describe();

  /**
   * Releases the store's resources (stops background work, closes connections or files). Further
   * operations throw {@link IllegalStateException}; closing again does nothing. A store built on a
   * caller-owned client or pool leaves that client or pool open.
   */
  @Override
  void close();
}
