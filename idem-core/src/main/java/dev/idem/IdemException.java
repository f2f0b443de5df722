package dev.idem;

/**
 * The root of every exception Idem throws. Contention is never an exception (it is a {@link
 * Decision}); an exception means misuse, bad input, or a store that could not answer.
 *
 * <p>Subclasses say which: {@link StoreUnavailableException} is retryable, {@link
 * KeyDerivationException} and {@link IdemConfigException} are bad input that a retry will not fix,
 * {@link ReservationSettledException} is a programming error.
 */
public class IdemException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message that says what happened and what to do.
   *
   * @param message the message
   */
  public IdemException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and the underlying cause.
   *
   * @param message the message
   * @param cause the cause
   */
  public IdemException(String message, Throwable cause) {
    super(message, cause);
  }
}
