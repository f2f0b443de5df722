/**
 * Idem's Redis store: one Lua script per operation, over Lettuce (standalone, Sentinel, Cluster).
 */
module dev.idem.store.redis {
  requires transitive dev.idem.core;
  requires transitive lettuce.core;

  exports dev.idem.store.redis;
}
