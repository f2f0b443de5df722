/**
 * Metrics (Micrometer, scraped in Prometheus format at {@code /metrics}) and the per-pipeline
 * counts of {@code /admin/stats}.
 */
@NullMarked
package dev.idem.server.metrics;

import org.jspecify.annotations.NullMarked;
