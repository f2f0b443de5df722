package dev.idem.server.deliver;

/**
 * Where a pipeline delivers events: HTTP, stdout, a JSON-lines file, a JDBC table. One call is one
 * attempt; retries are the caller's ({@code SyncDeliverer}, {@code OutboxDispatcher}). Thread-safe.
 */
public interface Sink extends AutoCloseable {

  /**
   * Makes one delivery attempt. Never throws for a downstream failure: that is a {@link
   * DeliveryOutcome.Failed}.
   *
   * @param delivery the event
   * @return the outcome
   */
  DeliveryOutcome deliver(Delivery delivery);

  /**
   * Returns a short description for logs, e.g. {@code http:http://127.0.0.1:9000/orders}.
   *
   * @return the description
   */
  String describe();

  /** Releases the sink's resources (connections, file handles). */
  @Override
  void close();
}
