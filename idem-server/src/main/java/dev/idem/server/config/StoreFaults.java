package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * How a store answers faults: how long a call may stall, how fast a lost connection comes back,
 * whether the service starts without the store, and how long an outbox claim hides an entry.
 *
 * @param timeout jdbc: the bound on every statement (the server's statement and lock timeouts, the
 *     driver's socket timeout one second longer); redis: the command timeout. Default 2 s
 * @param reconnectDelay redis: the longest wait between reconnect attempts. Default 250 ms
 * @param requireDurable redis: refuse to start on a Redis that can forget keys (an eviction policy
 *     other than {@code noeviction}, or no append-only file) instead of warning. Default false
 * @param failFast redis, jdbc: fail the service's start when the store cannot be reached (the old
 *     behaviour) instead of starting and answering 503 for its pipelines until it can. Default
 *     false
 * @param claimTimeout stores with an outbox: how long a claimed outbox entry stays hidden from
 *     other deliverers; after a crash of a shared store's instance its claims come back after this.
 *     Default 5 minutes
 */
public record StoreFaults(
    Duration timeout,
    Duration reconnectDelay,
    boolean requireDurable,
    boolean failFast,
    Duration claimTimeout) {

  /** The default statement or command timeout: 2 s. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

  /** The default longest reconnect wait: 250 ms. */
  public static final Duration DEFAULT_RECONNECT_DELAY = Duration.ofMillis(250);

  /** The default outbox claim timeout: 5 minutes. */
  public static final Duration DEFAULT_CLAIM_TIMEOUT = Duration.ofMinutes(5);

  /** The defaults. */
  public static final StoreFaults DEFAULTS =
      new StoreFaults(
          DEFAULT_TIMEOUT, DEFAULT_RECONNECT_DELAY, false, false, DEFAULT_CLAIM_TIMEOUT);

  /**
   * Validates the ranges.
   *
   * @throws IdemConfigException naming the field
   */
  public StoreFaults {
    Objects.requireNonNull(timeout, "timeout");
    Objects.requireNonNull(reconnectDelay, "reconnectDelay");
    Objects.requireNonNull(claimTimeout, "claimTimeout");
    if (timeout.toMillis() < 100 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IdemConfigException("timeout must be 100ms to 10m, got " + timeout + " (e.g. 2s)");
    }
    if (reconnectDelay.toMillis() < 1 || reconnectDelay.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new IdemConfigException(
          "reconnect_delay must be 1ms to 1m, got " + reconnectDelay + " (e.g. 250ms)");
    }
    if (claimTimeout.toMillis() < 1_000) {
      throw new IdemConfigException(
          "claim_timeout must be at least 1s (longer than one delivery attempt), got "
              + claimTimeout);
    }
  }
}
