/**
 * A {@link dev.idem.spi.DedupStore} on Redis, shared by many instances: {@link
 * dev.idem.store.redis.RedisDedupStore}. Every operation is one Lua script on one Redis key, so it
 * works unchanged on Redis Cluster. The key layout and value format are documented in {@code
 * docs/stores/redis.md} and are stable.
 */
@NullMarked
package dev.idem.store.redis;

import org.jspecify.annotations.NullMarked;
