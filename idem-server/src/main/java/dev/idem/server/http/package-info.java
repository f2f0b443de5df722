/**
 * The HTTP front: one Jetty 12 core handler (no servlet layer) that routes webhook paths to
 * pipelines and serves {@code /health}, {@code /metrics} and the bearer-token {@code /admin} API.
 */
@NullMarked
package dev.idem.server.http;

import org.jspecify.annotations.NullMarked;
