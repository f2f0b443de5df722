package dev.idem.server.transform;

import dev.idem.IdemException;

/**
 * A transform failed on one event (e.g. a jq error on an unexpected shape). The event is not
 * delivered and its dedup reservation is released; the message names the pipeline's program and the
 * error.
 */
public final class TransformException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed
   * @param cause the transform library's exception
   */
  public TransformException(String message, Throwable cause) {
    super(message, cause);
  }
}
