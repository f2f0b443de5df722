/**
 * Logging support: the console encoder that writes text or JSON lines ({@code IDEM_LOG_FORMAT}),
 * the structured fields of decision and delivery log lines, and the optional access log.
 */
@NullMarked
package dev.idem.server.logging;

import org.jspecify.annotations.NullMarked;
