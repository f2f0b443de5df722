package dev.idem.internal;

import dev.idem.DedupKey;
import dev.idem.Fingerprint;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import org.jspecify.annotations.Nullable;

/**
 * A store's reserve and commit bound to one scope, for the {@link dev.idem.Deduplicator}'s hot
 * path; not API. Each call does exactly what the store's {@link dev.idem.spi.DedupStore#reserve}
 * and {@link dev.idem.spi.DedupStore#commit} do with a request of the bound scope and the same
 * values, with two differences that only save work: the caller passes the parts of the request
 * (which it has already validated: a non-zero token, a lease deadline computed as {@link
 * dev.idem.spi.ReserveRequest#leaseUntil()} does), and an acquisition that replaced nothing is
 * answered with {@code null} instead of an {@link ReserveResult.Acquired} the caller can build
 * itself. On the JVM this matters: when one method can return both a fresh {@code Acquired} and an
 * answer made elsewhere, escape analysis cannot remove the {@code Acquired}, so every acquired
 * event allocated it.
 */
public interface ScopedFastPath {

  /**
   * Reserves a key of the bound scope.
   *
   * @param key the key
   * @param fingerprint the payload's fingerprint, or null
   * @param token the fencing token, not 0
   * @param nowMillis the caller's time
   * @param leaseUntil when the lease runs out ({@code nowMillis + lease}, saturated)
   * @param ttl the TTL a duplicate hit refreshes
   * @return null if the key was absent and is now held with {@code token} until {@code leaseUntil};
   *     otherwise what {@link dev.idem.spi.DedupStore#reserve} answers (an {@link
   *     ReserveResult.Acquired} only when it replaced an expired entry)
   */
  @Nullable ReserveResult reserve(
      DedupKey key,
      @Nullable Fingerprint fingerprint,
      long token,
      long nowMillis,
      long leaseUntil,
      Ttl ttl);

  /**
   * Claims a handle under the key's lock, then commits the key of the bound scope: the facade's
   * commit, whose handle needs no compare-and-set of its own (one locked instruction less per
   * event: about 9% of the CPU time of a reserve + commit at 10,000 keys). Every claim of a handle
   * whose facade has a fast path is made under the lock of its key's stripe ({@link #claim} for the
   * others), so the claims exclude each other with plain reads and writes.
   *
   * @param key the key
   * @param token the reservation's token
   * @param nowMillis the caller's exact time
   * @param ttl the TTL to apply
   * @param result the result to store (the store copies it), or null
   * @param claimer claims {@code handle}
   * @param handle the reservation being settled
   * @return null if the handle could not be claimed (nothing changed); otherwise what {@link
   *     dev.idem.spi.DedupStore#commit} answers
   */
  @Nullable SettleResult commit(
      DedupKey key,
      long token,
      long nowMillis,
      Ttl ttl,
      byte @Nullable [] result,
      Claimer claimer,
      Object handle);

  /**
   * Claims a handle under the key's lock, for a settlement made through the store's SPI (release,
   * batches, the outbox).
   *
   * @param key the key
   * @param claimer claims {@code handle}
   * @param handle the reservation being settled
   * @return whether it was claimed
   */
  boolean claim(DedupKey key, Claimer claimer, Object handle);

  /**
   * Claims handles for settlement; called only under the lock of the handle's key, so that plain
   * reads and writes suffice.
   */
  interface Claimer {
    /**
     * Claims an open handle.
     *
     * @param handle the handle
     * @return true if it was open and is now being settled by the caller
     */
    boolean claim(Object handle);

    /**
     * Gives a claim back after the settlement failed, so that it may be retried.
     *
     * @param handle the handle
     */
    void unclaim(Object handle);
  }

  /** A store that can bind its reserve and commit to a scope. */
  interface Source {
    /**
     * Returns this store's operations bound to {@code scope}.
     *
     * @param scope the scope
     * @return the bound operations
     */
    ScopedFastPath bind(dev.idem.Scope scope);
  }
}
