package dev.idem.key;

import dev.idem.KeyDerivationException;

/**
 * Bytes that {@link CanonicalJson} or a {@link FieldPath} cannot read as I-JSON (RFC 7493): not
 * UTF-8, not JSON, a duplicate member name, a lone surrogate, nesting deeper than {@link
 * CanonicalJson#MAX_DEPTH}, or a number outside the range keys keep exactly ({@link
 * NumberOutOfRangeException}). Bad input that a retry will not fix; a service answers {@code 400}.
 */
public class InvalidJsonException extends KeyDerivationException {
  private static final long serialVersionUID = 1L;

  private final String problem;
  private final int offset;

  /**
   * Creates the exception.
   *
   * @param problem what is wrong, e.g. {@code expected ',' or '}'}
   * @param offset the byte offset in the input where the problem was found
   */
  public InvalidJsonException(String problem, int offset) {
    this("not JSON: " + problem + " at byte " + offset, problem, offset);
  }

  /**
   * Creates the exception with its own message, for a subclass whose input is JSON but not what
   * Idem can read.
   *
   * @param message the whole message
   * @param problem what is wrong
   * @param offset the byte offset in the input where the problem was found
   */
  protected InvalidJsonException(String message, String problem, int offset) {
    super(message);
    this.problem = problem;
    this.offset = offset;
  }

  /**
   * Returns what is wrong and where, without the "not JSON" lead, e.g. {@code expected ',' or '}'
   * in an object at byte 17}.
   *
   * @return the problem and its byte offset
   */
  public String problem() {
    return problem + " at byte " + offset;
  }

  /**
   * Returns the byte offset in the input where the problem was found (0 is the first byte).
   *
   * @return the offset
   */
  public int offset() {
    return offset;
  }
}
