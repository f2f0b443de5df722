package dev.idem.server.pipeline;

import dev.idem.IdemException;

/**
 * An event's ordering key stayed held by another instance for longer than {@code lock_ttl}: the
 * event was not processed, its dedup key is released, and the source retries it later.
 */
public final class OrderingBusyException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened
   */
  public OrderingBusyException(String message) {
    super(message);
  }
}
