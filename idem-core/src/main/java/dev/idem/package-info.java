/**
 * Idem's API: decide whether an event is new, a duplicate, in flight or a conflict ({@link
 * dev.idem.Deduplicator}, {@link dev.idem.Decision}), and settle the work it lets through ({@link
 * dev.idem.Reservation}).
 */
@NullMarked
package dev.idem;

import org.jspecify.annotations.NullMarked;
