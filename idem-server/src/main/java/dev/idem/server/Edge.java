package dev.idem.server;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.config.SinkSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryListener;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.deliver.Sink;
import dev.idem.server.pipeline.Deliverer;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.transform.Transform;
import dev.idem.spi.OutboxStore;
import java.time.Duration;

/**
 * The parts of a pipeline at the service's edges, made from settings: signature verifiers,
 * transforms, sinks, inline and background deliverers, and the outbox payload format. {@link
 * ServiceAssembly} builds pipelines through it; the default is {@link DefaultEdge}, and tests
 * substitute sinks that fail on demand.
 */
public interface Edge {

  /**
   * Makes a signature verifier.
   *
   * @param settings the scheme, secret and tolerance
   * @param time the clock timestamps are judged by
   * @return the verifier
   */
  SignatureVerifier verifier(SignatureSettings settings, TimeSource time);

  /**
   * Compiles a jq program.
   *
   * @param program the program
   * @return the transform
   * @throws IdemConfigException if the program does not compile
   */
  Transform transform(String program);

  /**
   * Opens a sink.
   *
   * @param pipeline the pipeline id
   * @param settings where to deliver
   * @return the sink
   */
  Sink sink(String pipeline, SinkSettings settings);

  /**
   * Makes an inline deliverer with retries (sync mode).
   *
   * @param sink the sink
   * @param retry the retry policy
   * @param listener hears outcomes
   * @return the deliverer
   */
  Deliverer deliverer(Sink sink, RetryPolicy retry, DeliveryListener listener);

  /**
   * Starts delivering a pipeline's outbox queue in the background (async mode): retries with
   * backoff, events with the same ordering key one at a time and in order, dead letters after the
   * last retry. Entries left from a previous run are delivered too.
   *
   * @param pipeline the pipeline id (the outbox queue)
   * @param outbox the store's outbox
   * @param sink the sink
   * @param retry the retry policy
   * @param listener hears outcomes
   * @return the running dispatcher
   */
  Dispatcher dispatcher(
      String pipeline, OutboxStore outbox, Sink sink, RetryPolicy retry, DeliveryListener listener);

  /**
   * Starts delivering a pipeline's outbox queue with a given claim timeout; see {@link
   * #dispatcher(String, OutboxStore, Sink, RetryPolicy, DeliveryListener)}. The default ignores the
   * claim timeout (the dispatcher's own default, 5 minutes).
   *
   * @param pipeline the pipeline id (the outbox queue)
   * @param outbox the store's outbox
   * @param sink the sink
   * @param retry the retry policy
   * @param listener hears outcomes
   * @param claimTimeout how long a claim hides an entry ({@code store.claim_timeout})
   * @return the running dispatcher
   */
  default Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener,
      Duration claimTimeout) {
    return dispatcher(pipeline, outbox, sink, retry, listener);
  }

  /**
   * Starts delivering a pipeline's outbox queue with a given claim timeout and poison-key handling;
   * see {@link #dispatcher(String, OutboxStore, Sink, RetryPolicy, DeliveryListener, Duration)}.
   * With {@code blockOnFailure} ({@code ordering.on_failure: block}), an ordered entry that fails
   * for good keeps its ordering key blocked until an operator skips or retries it, instead of being
   * dead lettered. The default supports only {@code blockOnFailure = false}.
   *
   * @param pipeline the pipeline id (the outbox queue)
   * @param outbox the store's outbox
   * @param sink the sink
   * @param retry the retry policy
   * @param listener hears outcomes
   * @param claimTimeout how long a claim hides an entry ({@code store.claim_timeout})
   * @param blockOnFailure whether a failing ordered entry blocks its key
   * @return the running dispatcher
   * @throws dev.idem.IdemConfigException if {@code blockOnFailure} is set and this edge cannot
   *     block keys
   */
  default Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener,
      Duration claimTimeout,
      boolean blockOnFailure) {
    if (blockOnFailure) {
      throw new IdemConfigException(
          "this edge's outbox dispatcher cannot block poison keys; use ordering.on_failure:"
              + " dead_letter");
    }
    return dispatcher(pipeline, outbox, sink, retry, listener, claimTimeout);
  }

  /**
   * Encodes a delivery as an outbox payload.
   *
   * @param delivery the delivery
   * @return the payload
   */
  byte[] encode(Delivery delivery);

  /**
   * Decodes an outbox payload.
   *
   * @param payload what {@link #encode} returned
   * @return the delivery
   */
  Delivery decode(byte[] payload);

  /** A pipeline's background delivery from its outbox queue. */
  interface Dispatcher extends AutoCloseable {
    /**
     * Says that an entry was just enqueued, so delivery starts now rather than at the next poll.
     */
    void wakeUp();

    /**
     * Stops delivering: attempts in progress finish (bounded), entries left stay in the outbox for
     * the next start.
     */
    @Override
    void close();
  }
}
