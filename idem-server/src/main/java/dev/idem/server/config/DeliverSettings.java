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

  /** Validates the fields. */
  public DeliverSettings {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(retry, "retry");
    Objects.requireNonNull(sink, "sink");
  }
}
