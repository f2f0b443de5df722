/**
 * Where events come from: the contract of a pulling source ({@link
 * dev.idem.server.source.EventSource}) and one package per source, each turning a pipeline's {@link
 * dev.idem.server.pipeline.Outcome} into its transport's own answer.
 */
@NullMarked
package dev.idem.server.source;

import org.jspecify.annotations.NullMarked;
