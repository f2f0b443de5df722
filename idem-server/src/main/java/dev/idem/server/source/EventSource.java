package dev.idem.server.source;

/**
 * A source that pulls events itself (a broker consumer): started once the service is up, it feeds
 * each event to its pipeline and answers the outcome in the broker's terms (commit an offset, ack,
 * nack, term). The webhook source is not one: the HTTP server pushes its requests.
 *
 * <p>{@link #close} stops consuming, waits (bounded) for the events in hand to be settled, and
 * acknowledges what was settled; what was not is redelivered by the broker later.
 */
public interface EventSource extends AutoCloseable {

  /**
   * Returns the pipeline this source feeds.
   *
   * @return the pipeline id
   */
  String pipeline();

  /**
   * Starts consuming on the source's own threads; returns at once.
   *
   * @throws dev.idem.IdemException if the source cannot start (e.g. the broker refused the
   *     subscription)
   */
  void start();

  /** Stops consuming; idempotent; never throws. */
  @Override
  void close();
}
