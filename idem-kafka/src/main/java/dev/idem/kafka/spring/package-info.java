/**
 * Idem for Spring Kafka: {@link dev.idem.kafka.spring.IdemRecordInterceptor} maps a listener
 * container's intercept / success / failure hooks to reserve / commit / release. Needs {@code
 * spring-kafka} on the class path (an optional dependency of this module).
 */
@NullMarked
package dev.idem.kafka.spring;

import org.jspecify.annotations.NullMarked;
