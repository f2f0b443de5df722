/**
 * Not API: what the poll loops of {@code dev.idem.kafka} and {@code dev.idem.kafka.state} share.
 */
@NullMarked
package dev.idem.kafka.internal;

import org.jspecify.annotations.NullMarked;
