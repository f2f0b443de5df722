package dev.idem.spi;

import dev.idem.DedupKey;
import org.jspecify.annotations.Nullable;

/**
 * An outbox entry as {@link OutboxStore#claim} hands it out.
 *
 * @param id the entry's id; ids grow in append order within a queue
 * @param queue the queue
 * @param key the event's dedup key
 * @param payload the message; callers must not modify it
 * @param attempts how many times it has been claimed, this claim included
 * @param enqueuedAtMillis when it was appended
 * @param lastError the error recorded by the last {@link OutboxStore#reschedule}, or null
 */
public record OutboxRecord(
    long id,
    String queue,
    DedupKey key,
    byte[] payload,
    int attempts,
    long enqueuedAtMillis,
    @Nullable String lastError) {}
