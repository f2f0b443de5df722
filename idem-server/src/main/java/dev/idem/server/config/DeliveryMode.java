package dev.idem.server.config;

import java.util.Locale;

/** When a webhook is answered relative to its delivery ({@code deliver.mode}). */
public enum DeliveryMode implements ConfigName {
  /** Deliver inline, then answer; a failed delivery releases the key. */
  SYNC,
  /**
   * Write the key's commit and an outbox entry atomically, answer, and deliver from the outbox in
   * the background with retries; after the last retry the event becomes a dead letter.
   */
  ASYNC;

  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
