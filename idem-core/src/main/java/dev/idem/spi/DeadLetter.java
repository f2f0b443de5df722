package dev.idem.spi;

import dev.idem.DedupKey;

/**
 * An outbox entry whose delivery failed for good, kept for an operator to see.
 *
 * @param id the outbox id it had
 * @param queue the queue
 * @param key the event's dedup key
 * @param payload the message; callers must not modify it
 * @param attempts how many deliveries were tried
 * @param enqueuedAtMillis when it was appended to the outbox
 * @param deadAtMillis when it was given up
 * @param reason the last error
 */
public record DeadLetter(
    long id,
    String queue,
    DedupKey key,
    byte[] payload,
    int attempts,
    long enqueuedAtMillis,
    long deadAtMillis,
    String reason) {}
