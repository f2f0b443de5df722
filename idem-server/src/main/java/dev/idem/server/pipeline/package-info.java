/**
 * The per-pipeline runtime: source, key, dedup, ordering, transform, delivery and settlement, in
 * that order; nothing downstream reaches back except the settlement. Independent of HTTP: a {@link
 * dev.idem.server.pipeline.Pipeline} takes a {@link dev.idem.server.pipeline.InboundRequest} and
 * returns an {@link dev.idem.server.pipeline.Answer}.
 */
@NullMarked
package dev.idem.server.pipeline;

import org.jspecify.annotations.NullMarked;
