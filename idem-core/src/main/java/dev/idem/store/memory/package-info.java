/**
 * The in-memory store, {@link dev.idem.store.memory.MemoryDedupStore}: keys held as primitive
 * digests (about 79 bytes per key at a million keys), bounded per scope with strict
 * least-recently-used eviction, sliding or fixed TTLs, fenced leases, result replay, and a
 * non-durable outbox. Every scope is linearizable; nothing survives the process.
 */
@NullMarked
package dev.idem.store.memory;

import org.jspecify.annotations.NullMarked;
