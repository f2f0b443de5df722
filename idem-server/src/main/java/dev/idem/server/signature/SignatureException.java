package dev.idem.server.signature;

import dev.idem.IdemException;

/**
 * A webhook's signature is missing, wrong or stale. The service answers {@code 401} and reserves
 * nothing. The message says which header was expected and what was wrong, never the secret or the
 * expected signature.
 */
public final class SignatureException extends IdemException {
  private static final long serialVersionUID = 1L;

  /** Why verification failed. */
  public enum Reason {
    /** A required header (or part of it) is absent or malformed. */
    MISSING,
    /** No signature matched. */
    INVALID,
    /** The signed timestamp is outside the tolerance (a replay, or a clock far off). */
    STALE
  }

  private final Reason reason;

  /**
   * Creates the exception.
   *
   * @param reason why verification failed
   * @param message what was wrong and what the sender must send
   */
  public SignatureException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  /**
   * Returns why verification failed.
   *
   * @return the reason
   */
  public Reason reason() {
    return reason;
  }
}
