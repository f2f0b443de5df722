/**
 * Kafka-partitioned dedup state (the Kafka Streams model on plain Kafka clients): {@link
 * dev.idem.kafka.state.PartitionedDedupState} keeps the dedup state of the partitions a consumer
 * owns in a local RocksDB with a compacted changelog topic, restores a partition from it on
 * assignment before it is consumed, and {@link dev.idem.kafka.state.PartitionedDedupLoop} runs the
 * poll loop on it. No shared store: scale is the input topic's partition count. Needs {@code
 * org.rocksdb:rocksdbjni} on the class path (an optional dependency of this module).
 */
@NullMarked
package dev.idem.kafka.state;

import org.jspecify.annotations.NullMarked;
