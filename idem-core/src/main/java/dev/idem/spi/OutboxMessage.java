package dev.idem.spi;

import dev.idem.DedupKey;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A message to deliver later, appended to an outbox in the same atomic step as a key's commit (the
 * transactional outbox): once {@link OutboxStore#commitAndEnqueue} returns, both are durable or
 * neither is.
 *
 * @param queue the outbox queue, normally the pipeline id
 * @param key the event's dedup key (sent downstream as {@code Idempotency-Key})
 * @param payload the message, opaque to the store; callers must not modify it
 * @param orderingKey the event's ordering key, or null: entries of one queue with the same ordering
 *     key are handed out one at a time, oldest first (see {@link OutboxStore#claim}); 1 to {@value
 *     #MAX_ORDERING_KEY_LENGTH} characters
 */
public record OutboxMessage(
    String queue, DedupKey key, byte[] payload, @Nullable String orderingKey) {

  /** The longest ordering key, in UTF-16 characters (stores keep it in a 255-character column). */
  public static final int MAX_ORDERING_KEY_LENGTH = 255;

  /** Validates the fields. */
  public OutboxMessage {
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(payload, "payload");
    if (queue.isBlank()) {
      throw new IllegalArgumentException("outbox queue name must not be blank");
    }
    if (orderingKey != null
        && (orderingKey.isEmpty() || orderingKey.length() > MAX_ORDERING_KEY_LENGTH)) {
      throw new IllegalArgumentException(
          "an outbox ordering key must be 1 to "
              + MAX_ORDERING_KEY_LENGTH
              + " characters (or null for none), got "
              + orderingKey.length());
    }
  }

  /**
   * A message without an ordering key: it is handed out as soon as it is due, independently of the
   * other entries.
   *
   * @param queue the outbox queue
   * @param key the event's dedup key
   * @param payload the message
   */
  public OutboxMessage(String queue, DedupKey key, byte[] payload) {
    this(queue, key, payload, null);
  }
}
