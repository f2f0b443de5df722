/**
 * Delivery: sinks (HTTP, stdout, file, JDBC), retries with backoff and jitter, synchronous
 * delivery, and the asynchronous outbox dispatcher with dead letters.
 */
@NullMarked
package dev.idem.server.deliver;

import org.jspecify.annotations.NullMarked;
