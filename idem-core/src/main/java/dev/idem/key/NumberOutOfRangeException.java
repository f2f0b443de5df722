package dev.idem.key;

/**
 * A JSON number that keys cannot keep exactly: a non-zero number whose magnitude is below {@code
 * 1e-324} or at least {@code 1e309} (its decimal exponent is outside [-324, 308], the decimal
 * exponents of IEEE-754 doubles). Such a number is refused rather than rounded, so {@code 1e-400}
 * never becomes {@code 0} and {@code 1e400} never becomes infinity (which would make distinct
 * values one key). The fix is on the sender's side: send the value as a JSON string. A service
 * answers {@code 400}.
 */
public class NumberOutOfRangeException extends InvalidJsonException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param problem what is wrong and what to do, e.g. {@code number 1e400 is outside the range ...}
   * @param offset the byte offset of the number in the input
   */
  public NumberOutOfRangeException(String problem, int offset) {
    super(problem + " (at byte " + offset + ")", problem, offset);
  }
}
