/**
 * Idem for Apache Camel 4.x: {@link dev.idem.camel.IdemIdempotentRepository}, a drop-in {@code
 * IdempotentRepository} for Camel's {@code idempotentConsumer} over any Idem store, and {@link
 * dev.idem.camel.IdemConsumerProcessor}, which also tells an in-flight duplicate apart from a done
 * one so that the in-flight one is retried instead of dropped.
 */
@NullMarked
package dev.idem.camel;

import org.jspecify.annotations.NullMarked;
