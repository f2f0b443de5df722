/**
 * The RabbitMQ source ({@code source.rabbitmq}): queue consumers with manual acknowledgements that
 * feed a pipeline and answer its outcomes with ack, delayed requeue or reject.
 */
@NullMarked
package dev.idem.server.source.rabbitmq;

import org.jspecify.annotations.NullMarked;
