package dev.idem.camel;

import dev.idem.IdemException;
import dev.idem.Scope;
import java.time.Instant;

/**
 * An exchange's message id is held by another exchange right now (in flight): the message was
 * neither processed nor dropped. {@link IdemConsumerProcessor} fails the exchange with it so that
 * Camel's error handler retries it (or the source redelivers it) after the holder settles: if the
 * holder commits, the retry is a duplicate; if it fails, the retry runs the work.
 *
 * <p>Retry it with a redelivery policy, e.g. {@code
 * onException(KeyInFlightException.class).maximumRedeliveries(20).redeliveryDelay(250)}.
 */
public class KeyInFlightException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String messageId;
  private final transient Instant leaseUntil;

  /**
   * Creates the exception.
   *
   * @param scope the dedup scope
   * @param messageId the exchange's message id
   * @param leaseUntil when the holder's lease runs out at the latest
   */
  public KeyInFlightException(Scope scope, String messageId, Instant leaseUntil) {
    super(
        "message id '"
            + messageId
            + "' in scope "
            + scope
            + " is being processed by another exchange (its lease runs until "
            + leaseUntil
            + "); retry later, e.g. onException(KeyInFlightException.class)"
            + ".maximumRedeliveries(20).redeliveryDelay(250)");
    this.messageId = messageId;
    this.leaseUntil = leaseUntil;
  }

  /**
   * Returns the message id that is in flight.
   *
   * @return the message id
   */
  public String messageId() {
    return messageId;
  }

  /**
   * Returns when the holder's lease runs out at the latest: a retry after it always gets an answer
   * other than in flight.
   *
   * @return the lease's end
   */
  public Instant leaseUntil() {
    return leaseUntil;
  }
}
