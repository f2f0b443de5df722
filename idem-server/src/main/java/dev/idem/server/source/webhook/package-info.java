/**
 * The webhook source's edge: signatures, caller tokens and the HTTP answer to each pipeline
 * outcome. The HTTP server itself (routing, body reading, limits) is in {@code
 * dev.idem.server.http}.
 */
@NullMarked
package dev.idem.server.source.webhook;

import org.jspecify.annotations.NullMarked;
