/**
 * What store authors implement: {@link dev.idem.spi.DedupStore} (and {@link
 * dev.idem.spi.OutboxStore} for durable stores), with {@link dev.idem.spi.DedupStateMachine} as the
 * reference semantics. Every store passes the contract suite in {@code idem-store-tck}.
 */
@NullMarked
package dev.idem.spi;

import org.jspecify.annotations.NullMarked;
