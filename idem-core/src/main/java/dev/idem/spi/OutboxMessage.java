package dev.idem.spi;

import dev.idem.DedupKey;
import java.util.Objects;

/**
 * A message to deliver later, appended to an outbox in the same atomic step as a key's commit (the
 * transactional outbox): once {@link OutboxStore#commitAndEnqueue} returns, both are durable or
 * neither is.
 *
 * @param queue the outbox queue, normally the pipeline id
 * @param key the event's dedup key (sent downstream as {@code Idempotency-Key})
 * @param payload the message, opaque to the store; callers must not modify it
 */
public record OutboxMessage(String queue, DedupKey key, byte[] payload) {
  /** Validates the fields. */
  public OutboxMessage {
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(payload, "payload");
    if (queue.isBlank()) {
      throw new IllegalArgumentException("outbox queue name must not be blank");
    }
  }
}
