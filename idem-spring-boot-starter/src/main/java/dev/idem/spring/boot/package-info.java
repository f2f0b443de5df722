/**
 * Idem for Spring Boot 4: auto-configuration of a store and a {@link dev.idem.Deduplicator} per
 * scope from {@code idem.*} properties ({@link dev.idem.spring.boot.IdemProperties}), {@link
 * dev.idem.spring.boot.Idempotent} methods, a store health indicator and Micrometer meters.
 */
@NullMarked
package dev.idem.spring.boot;

import org.jspecify.annotations.NullMarked;
