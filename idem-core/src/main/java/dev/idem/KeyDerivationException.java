package dev.idem;

/**
 * An event could not be given a key: the key is blank, a field is missing, or the body cannot be
 * keyed (not JSON, absent). Bad input for that one event (a service answers {@code 400}); the
 * message says what to configure, e.g. "give a key: dedup.key".
 */
public class KeyDerivationException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what is missing and how to fix it
   */
  public KeyDerivationException(String message) {
    super(message);
  }

  /**
   * Creates the exception with a cause (e.g. a JSON parse error).
   *
   * @param message what is missing and how to fix it
   * @param cause the underlying exception
   */
  public KeyDerivationException(String message, Throwable cause) {
    super(message, cause);
  }
}
