/**
 * Keys: turning an event into a {@link dev.idem.DedupKey}. Explicit strings and typed parts, a
 * header, one or several JSON field paths, or the default key (the caller's principal chain plus
 * SHA-256 of the body in RFC 8785 canonical JSON), all through one versioned, unambiguous encoding.
 */
@NullMarked
package dev.idem.key;

import org.jspecify.annotations.NullMarked;
