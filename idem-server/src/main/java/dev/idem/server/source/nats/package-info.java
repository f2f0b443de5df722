/**
 * The NATS JetStream source: a durable pull consumer whose messages are acked after settlement,
 * nak'ed with a delay while a key is in flight or the store is down, and terminated (after a
 * confirmed dead letter, when configured) when they are bad input.
 */
@NullMarked
package dev.idem.server.source.nats;

import org.jspecify.annotations.NullMarked;
