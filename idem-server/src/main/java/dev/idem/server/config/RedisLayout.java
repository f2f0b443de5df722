package dev.idem.server.config;

import java.util.Locale;

/** How a Redis store lays out its keys ({@code store.redis.layout}; see docs/stores/redis.md). */
public enum RedisLayout implements ConfigName {
  /** One Redis key per dedup key: the default. */
  STANDARD,
  /** Many keys per small hash, bucketed by expiry: about a third of the memory. */
  COMPACT;

  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
