/** The Kafka source ({@code source.kafka}): a consumer group that feeds a pipeline. */
@NullMarked
package dev.idem.server.source.kafka;

import org.jspecify.annotations.NullMarked;
