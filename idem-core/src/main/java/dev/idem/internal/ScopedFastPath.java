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
   * Commits a key of the bound scope.
   *
   * @param key the key
   * @param token the reservation's token
   * @param nowMillis the caller's exact time
   * @param ttl the TTL to apply
   * @param result the result to store (the store copies it), or null
   * @return what {@link dev.idem.spi.DedupStore#commit} answers
   */
  SettleResult commit(DedupKey key, long token, long nowMillis, Ttl ttl, byte @Nullable [] result);

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
