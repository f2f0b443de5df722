/**
 * The in-memory store: compact (keys held as primitive digests), bounded per scope with strict
 * least-recently-used eviction, with sliding or fixed TTLs, leases and results.
 */
@NullMarked
package dev.idem.store.memory;

import org.jspecify.annotations.NullMarked;
