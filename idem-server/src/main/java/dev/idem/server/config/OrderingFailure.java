package dev.idem.server.config;

/**
 * What happens to an ordering key whose event keeps failing ({@code ordering.on_failure}): a poison
 * event blocks only its own key, and after {@code ordering.max_attempts} this decides whether the
 * key moves on.
 */
public enum OrderingFailure implements ConfigName {
  /** Dead-letter the event (async) or give it up (sync) and let the key's next event proceed. */
  DEAD_LETTER,
  /** Keep the key blocked until an operator skips or retries it through the admin API. */
  BLOCK;

  @Override
  public String configName() {
    return this == DEAD_LETTER ? "dead_letter" : "block";
  }
}
