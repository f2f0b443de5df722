package dev.idem.spring.boot;

import dev.idem.IdemException;
import dev.idem.Scope;
import java.time.Instant;

/**
 * An {@link Idempotent} method was called with a key that another call holds right now: the method
 * did not run. Retry later: if the holder commits, the retry is a duplicate; if it fails, the retry
 * runs the method.
 */
public class IdempotentInFlightException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param scope the scope
   * @param key the key's text
   * @param method the method
   * @param leaseUntil when the holder's lease runs out at the latest
   */
  public IdempotentInFlightException(Scope scope, String key, String method, Instant leaseUntil) {
    super(
        method
            + " is running for key '"
            + key
            + "' in scope "
            + scope
            + " in another call (lease until "
            + leaseUntil
            + "); retry later");
  }
}
