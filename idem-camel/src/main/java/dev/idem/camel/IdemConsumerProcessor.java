package dev.idem.camel;

import dev.idem.Decision;
import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.Reservation;
import dev.idem.Settlement;
import dev.idem.key.KeyEncoding;
import java.time.Instant;
import java.util.Objects;
import org.apache.camel.Exchange;
import org.apache.camel.Expression;
import org.apache.camel.Processor;
import org.apache.camel.spi.Synchronization;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An idempotent consumer step that tells the three answers apart, where Camel's {@code
 * idempotentConsumer} can only tell new from not new. Put it where the route's once-only part
 * begins:
 *
 * <pre>{@code
 * onException(KeyInFlightException.class).maximumRedeliveries(20).redeliveryDelay(250);
 * from("jms:orders")
 *     .process(IdemConsumerProcessor.builder(dedup, header("orderId")).build())
 *     .to("bean:shipping");
 * }</pre>
 *
 * <p>For each exchange:
 *
 * <ol>
 *   <li>The message id expression is evaluated; a null or blank id fails the exchange with a {@link
 *       KeyDerivationException}.
 *   <li>The key is reserved in one atomic step.
 *   <li><b>New</b>: the exchange goes on; the key is committed when the exchange completes (its
 *       unit of work ends successfully, including an exception that a handler marked handled) and
 *       released when it fails, so a resend is accepted.
 *   <li><b>Duplicate</b> (committed): the exchange gets the property {@link
 *       Exchange#DUPLICATE_MESSAGE} and, by default, stops here; with {@link
 *       Builder#markDuplicates()} it goes on, marked, for the route to filter.
 *   <li><b>In flight</b> (another exchange holds the key now): the exchange fails with {@link
 *       KeyInFlightException}, so the error handler retries it or the source redelivers it. Camel's
 *       {@code idempotentConsumer} drops it instead, and if the holder then fails, the message is
 *       lost: neither attempt did the work.
 * </ol>
 *
 * <p>Thread-safe; one instance serves every exchange of its route.
 */
public final class IdemConsumerProcessor implements Processor {
  private static final Logger LOG = LoggerFactory.getLogger(IdemConsumerProcessor.class);

  private final Deduplicator dedup;
  private final Expression messageId;
  private final boolean skipDuplicates;

  private IdemConsumerProcessor(Builder b) {
    this.dedup = b.dedup;
    this.messageId = b.messageId;
    this.skipDuplicates = b.skipDuplicates;
  }

  /**
   * Starts a builder.
   *
   * @param dedup the deduplicator (store, scope, window, lease)
   * @param messageId the expression that gives each exchange's message id, e.g. {@code
   *     header("orderId")}
   * @return a builder that skips duplicates
   */
  public static Builder builder(Deduplicator dedup, Expression messageId) {
    return new Builder(dedup, messageId);
  }

  /**
   * Decides the exchange, as the class description says.
   *
   * @param exchange the exchange
   * @throws KeyInFlightException if another exchange holds the message id now
   * @throws KeyDerivationException if the message id is null or blank
   * @throws dev.idem.StoreUnavailableException if the store did not answer
   */
  @Override
  public void process(Exchange exchange) {
    String id = messageId.evaluate(exchange, String.class);
    if (id == null || id.isBlank()) {
      throw new KeyDerivationException(
          "no message id: "
              + messageId
              + " gave "
              + (id == null ? "null" : "a blank value")
              + " for exchange "
              + exchange.getExchangeId()
              + "; set it on every message or choose another expression");
    }
    Decision decision = dedup.reserve(KeyEncoding.ofString(id));
    if (decision instanceof Decision.Acquired a) {
      exchange.getExchangeExtension().addOnCompletion(new Settle(a.reservation(), id));
    } else if (decision instanceof Decision.InFlight f) {
      throw new KeyInFlightException(dedup.scope(), id, Instant.ofEpochMilli(f.leaseUntilMillis()));
    } else {
      // Duplicate. (A conflict needs a fingerprint, which this step never passes.)
      duplicate(exchange);
    }
  }

  private void duplicate(Exchange exchange) {
    exchange.setProperty(Exchange.DUPLICATE_MESSAGE, Boolean.TRUE);
    if (skipDuplicates) {
      exchange.setRouteStop(true);
    }
  }

  @Override
  public String toString() {
    return "IdemConsumer[" + dedup.scope() + " " + messageId + "]";
  }

  /** Settles one reservation when the exchange's unit of work ends. */
  private static final class Settle implements Synchronization {
    private final Reservation reservation;
    private final String id;

    Settle(Reservation reservation, String id) {
      this.reservation = reservation;
      this.id = id;
    }

    @Override
    public void onComplete(Exchange exchange) {
      settle(true);
    }

    @Override
    public void onFailure(Exchange exchange) {
      settle(false);
    }

    private void settle(boolean commit) {
      try {
        Settlement s = commit ? reservation.commit() : reservation.release();
        if (s == Settlement.LEASE_LOST) {
          LOG.warn(
              "message id '{}' in scope {}: the exchange outlived its lease; its {} changed"
                  + " nothing (another exchange may have taken the key over). Raise the lease.",
              id,
              reservation.scope(),
              commit ? "commit" : "release");
        }
      } catch (RuntimeException e) {
        // The exchange is over; the lease heals an unsettled key.
        LOG.warn(
            "message id '{}' in scope {}: could not {} the key; it stays in flight until its lease"
                + " ends ({})",
            id,
            reservation.scope(),
            commit ? "commit" : "release",
            reservation.leaseUntil(),
            e);
      }
    }
  }

  /** Builds an {@link IdemConsumerProcessor}. Not thread-safe. */
  public static final class Builder {
    private final Deduplicator dedup;
    private final Expression messageId;
    private boolean skipDuplicates = true;

    private Builder(Deduplicator dedup, Expression messageId) {
      this.dedup = Objects.requireNonNull(dedup, "dedup");
      this.messageId = Objects.requireNonNull(messageId, "messageId");
    }

    /**
     * Lets duplicates go on through the route, marked with {@link Exchange#DUPLICATE_MESSAGE}
     * (Camel's {@code skipDuplicate(false)}), instead of stopping them.
     *
     * @return this builder
     */
    public Builder markDuplicates() {
      this.skipDuplicates = false;
      return this;
    }

    /**
     * Returns the processor.
     *
     * @return a new processor
     */
    public IdemConsumerProcessor build() {
      return new IdemConsumerProcessor(this);
    }
  }
}
