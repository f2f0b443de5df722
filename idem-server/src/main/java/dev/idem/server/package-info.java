/**
 * The Idem service: YAML pipelines that receive webhooks and events, deduplicate and order them,
 * transform them and deliver them onward.
 */
@NullMarked
package dev.idem.server;

import org.jspecify.annotations.NullMarked;
