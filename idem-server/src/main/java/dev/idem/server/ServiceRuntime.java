package dev.idem.server;

import dev.idem.server.deliver.Delivery;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.spi.DedupStore;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything the HTTP front serves, assembled from a config: the pipelines, the stores they share,
 * the background deliverers and the sinks. Closing it stops the background deliverers first (so no
 * delivery is cut off by a closed sink or store), then closes the sinks, then the stores.
 *
 * @param pipelines the pipelines, in config order
 * @param stores each distinct store once (for {@code /health} and closing)
 * @param dispatchers background deliverers, stopped first
 * @param sinks the sinks, closed after the dispatchers
 * @param metrics the meters
 * @param prometheus the registry behind {@code /metrics}, or null
 * @param outboxDecoder turns outbox payloads back into deliveries (for dead letters)
 */
public record ServiceRuntime(
    List<Pipeline> pipelines,
    List<DedupStore> stores,
    List<AutoCloseable> dispatchers,
    List<AutoCloseable> sinks,
    IdemMetrics metrics,
    @Nullable PrometheusMeterRegistry prometheus,
    Function<byte[], Delivery> outboxDecoder)
    implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceRuntime.class);

  /** Validates and copies. */
  public ServiceRuntime {
    pipelines = List.copyOf(pipelines);
    stores = List.copyOf(stores);
    dispatchers = List.copyOf(dispatchers);
    sinks = List.copyOf(sinks);
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(outboxDecoder, "outboxDecoder");
  }

  /**
   * Stops the dispatchers, then closes the sinks, then the stores; logs and goes on at failures.
   */
  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>(dispatchers);
    order.addAll(sinks);
    order.addAll(stores);
    for (AutoCloseable c : order) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.warn("closing {} failed: {}", c, e.toString());
      }
    }
  }
}
