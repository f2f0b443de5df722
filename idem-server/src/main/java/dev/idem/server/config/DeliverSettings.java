package dev.idem.server.config;

import dev.idem.server.deliver.RetryPolicy;
import java.util.Objects;

/**
 * How a pipeline delivers ({@code deliver}).
 *
 * @param mode sync or async
 * @param retry how failed attempts are retried
 * @param sink where events go
 */
public record DeliverSettings(DeliveryMode mode, RetryPolicy retry, SinkSettings sink) {

  /** The longest {@code backoff} and {@code max_backoff}: 24 hours. */
  public static final java.time.Duration MAX_BACKOFF = java.time.Duration.ofHours(24);

  /** Validates the fields. */
  public DeliverSettings {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(retry, "retry");
    Objects.requireNonNull(sink, "sink");
  }
}
