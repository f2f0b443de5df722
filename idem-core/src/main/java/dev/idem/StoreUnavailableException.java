package dev.idem;

/**
 * The store could not be reached or did not answer in time. Retryable: nothing was decided by the
 * caller's side, and a service answers {@code 503} with {@code Retry-After}.
 *
 * <p>When {@link #outcomeUnknown()} is true the command may have been applied (for example a
 * timeout after the request was sent). Idem is built so that this is safe: an unknown reserve
 * leaves at most an in-flight entry that its lease heals, an unknown commit leaves either a
 * committed key or an in-flight one that heals the same way.
 */
public class StoreUnavailableException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String store;
  private final boolean outcomeUnknown;

  /**
   * Creates the exception.
   *
   * @param store the store's name, e.g. {@code redis://127.0.0.1:6379}
   * @param outcomeUnknown whether the command may have been applied
   * @param message what failed and what to check
   * @param cause the driver's exception, if any
   */
  public StoreUnavailableException(
      String store, boolean outcomeUnknown, String message, Throwable cause) {
    super(message, cause);
    this.store = store;
    this.outcomeUnknown = outcomeUnknown;
  }

  /**
   * Creates the exception without a cause.
   *
   * @param store the store's name
   * @param outcomeUnknown whether the command may have been applied
   * @param message what failed and what to check
   */
  public StoreUnavailableException(String store, boolean outcomeUnknown, String message) {
    super(message);
    this.store = store;
    this.outcomeUnknown = outcomeUnknown;
  }

  /**
   * Returns the store's name.
   *
   * @return the name of the store that did not answer
   */
  public String store() {
    return store;
  }

  /**
   * Returns whether the command may have been applied despite the failure.
   *
   * @return true when the outcome is unknown (timeout after send), false when it surely was not
   *     applied
   */
  public boolean outcomeUnknown() {
    return outcomeUnknown;
  }
}
