package dev.idem.ordering;

/**
 * How an {@link OrderingGate} treats events that share an ordering key. In the service's YAML this
 * is {@code ordering.mode}: {@code strict} or {@code best-effort}.
 */
public enum OrderingMode {

  /**
   * Events with the same key run one at a time, in arrival order: an event that finds its key busy
   * waits in the key's queue until every event that arrived before it has released its turn (or was
   * presumed dead after {@code lockTtl}). Use it when operations on one entity do not commute
   * (create, then update, then delete).
   */
  STRICT,

  /**
   * An event takes its key's lock when the key is free and otherwise proceeds at once without it:
   * acquiring never waits, and events with the same key may then run concurrently and out of order.
   * Use it when ordering is preferred but throughput matters more (telemetry, analytics).
   */
  BEST_EFFORT
}
