/**
 * Keys: turning an event into a {@link dev.idem.DedupKey}. Explicit strings and typed parts, a
 * header, one or several JSON field paths, or the default key (the caller's principal chain plus
 * SHA-256 of the body in canonical JSON: RFC 8785 with numbers by their exact decimal value), all
 * through one versioned, unambiguous encoding. A field keeps its JSON type and a number its exact
 * value.
 */
@NullMarked
package dev.idem.key;

import org.jspecify.annotations.NullMarked;
