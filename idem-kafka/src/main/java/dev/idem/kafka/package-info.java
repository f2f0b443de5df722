/**
 * Idem for Kafka clients: {@link dev.idem.kafka.DedupPollLoop} runs a {@code Consumer}'s poll loop
 * so that each record's work runs once per dedup key (reserve the batch, process, commit the keys,
 * then the offsets), and {@link dev.idem.kafka.RecordKeys} derives keys from records.
 */
@NullMarked
package dev.idem.kafka;

import org.jspecify.annotations.NullMarked;
