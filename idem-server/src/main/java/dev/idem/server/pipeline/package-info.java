/**
 * The per-pipeline runtime: source, key, dedup, ordering, transform, delivery and settlement, in
 * that order; nothing downstream reaches back except the settlement. Independent of HTTP: a {@link
 * dev.idem.server.pipeline.Pipeline} takes a {@link dev.idem.server.pipeline.InboundRequest} and
 * returns a transport-neutral {@link dev.idem.server.pipeline.Outcome}, which each source's edge
 * answers in its own terms.
 */
@NullMarked
package dev.idem.server.pipeline;

import org.jspecify.annotations.NullMarked;
