package dev.idem.spi;

import dev.idem.DedupKey;
import org.jspecify.annotations.Nullable;

/**
 * An outbox entry still waiting for delivery, as {@link OutboxStore#pending} lists it for an
 * operator: how often it was tried, when it may be tried next, and the last error.
 *
 * @param id the entry's id; ids grow in append order within a queue
 * @param queue the queue
 * @param key the event's dedup key
 * @param payload the message; callers must not modify it
 * @param attempts how many times it has been claimed (0: not yet tried)
 * @param enqueuedAtMillis when it was appended
 * @param availableAtMillis the earliest time a claim may take it: at most {@code enqueuedAtMillis}
 *     for an entry never claimed, the end of the claim for one being delivered, the retry time for
 *     a rescheduled one
 * @param lastError the error recorded by the last {@link OutboxStore#reschedule}, or null
 */
public record PendingEntry(
    long id,
    String queue,
    DedupKey key,
    byte[] payload,
    int attempts,
    long enqueuedAtMillis,
    long availableAtMillis,
    @Nullable String lastError) {}
