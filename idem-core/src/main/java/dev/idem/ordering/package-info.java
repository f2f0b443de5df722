/**
 * Per-key ordering: events that share an ordering key run one at a time in arrival order (strict)
 * or take the key's lock when it is free (best effort); events of different keys run in parallel.
 */
@NullMarked
package dev.idem.ordering;

import org.jspecify.annotations.NullMarked;
