package dev.idem;

/**
 * A configuration value is not allowed. The message names the field and says what is allowed.
 * Thrown when a config record or builder is validated, never later at run time.
 */
public class IdemConfigException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message the field, the bad value, and what is allowed
   */
  public IdemConfigException(String message) {
    super(message);
  }
}
