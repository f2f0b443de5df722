package dev.idem.server.config;

/** How events that share an ordering key are serialised ({@code ordering.mode}). */
public enum OrderingMode implements ConfigName {
  /** One at a time, in arrival order; later events wait. */
  STRICT,
  /** Take the key's lock if it is free, otherwise proceed anyway. */
  BEST_EFFORT;

  @Override
  public String configName() {
    return this == STRICT ? "strict" : "best-effort";
  }
}
