package dev.idem.spring.boot;

import dev.idem.IdemException;
import dev.idem.Scope;

/** An {@link Idempotent} method was called with a key that is already committed. */
public class IdempotentDuplicateException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param scope the scope
   * @param key the key's text
   * @param method the method
   */
  public IdempotentDuplicateException(Scope scope, String key, String method) {
    super(
        method
            + " already ran for key '"
            + key
            + "' in scope "
            + scope
            + "; this call is a duplicate and did not run it");
  }
}
