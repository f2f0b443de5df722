package dev.idem;

/**
 * The store answered, but with something Idem cannot use: a corrupt or foreign value under one of
 * its keys, a schema it does not know, a setting that makes the store unsafe. Not retryable; the
 * message names the store and the fix.
 */
public class StoreException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what is wrong and what to do
   */
  public StoreException(String message) {
    super(message);
  }

  /**
   * Creates the exception with a cause.
   *
   * @param message what is wrong and what to do
   * @param cause the underlying exception
   */
  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
