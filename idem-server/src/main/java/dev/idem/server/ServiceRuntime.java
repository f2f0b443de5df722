package dev.idem.server;

import dev.idem.server.deliver.Delivery;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.webhook.WebhookSource;
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
 * @param webhooks the webhook edge of each pipeline whose source is a webhook
 * @param sources the pulling sources (brokers), started by {@link #startSources} and stopped first
 *     on close
 * @param stores each distinct store once (for {@code /health} and closing)
 * @param dispatchers background deliverers, stopped first
 * @param sinks the sinks, closed after the dispatchers
 * @param metrics the meters
 * @param prometheus the registry behind {@code /metrics}, or null
 * @param outboxDecoder turns outbox payloads back into deliveries (for dead letters)
 */
public record ServiceRuntime(
    List<Pipeline> pipelines,
    List<WebhookSource> webhooks,
    List<EventSource> sources,
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
    webhooks = List.copyOf(webhooks);
    sources = List.copyOf(sources);
    stores = List.copyOf(stores);
    dispatchers = List.copyOf(dispatchers);
    sinks = List.copyOf(sinks);
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(outboxDecoder, "outboxDecoder");
  }

  /**
   * Makes a runtime whose pipelines all take unsigned webhooks with no caller authentication.
   *
   * @param pipelines the pipelines
   * @param stores the stores
   * @param dispatchers background deliverers
   * @param sinks the sinks
   * @param metrics the meters
   * @param prometheus the registry, or null
   * @param outboxDecoder turns outbox payloads back into deliveries
   * @return the runtime
   */
  public static ServiceRuntime ofWebhooks(
      List<Pipeline> pipelines,
      List<DedupStore> stores,
      List<AutoCloseable> dispatchers,
      List<AutoCloseable> sinks,
      IdemMetrics metrics,
      @Nullable PrometheusMeterRegistry prometheus,
      Function<byte[], Delivery> outboxDecoder) {
    return new ServiceRuntime(
        pipelines,
        pipelines.stream().map(WebhookSource::unsigned).toList(),
        List.of(),
        stores,
        dispatchers,
        sinks,
        metrics,
        prometheus,
        outboxDecoder);
  }

  /**
   * Starts every pulling source; if one fails to start, closes those started and rethrows.
   *
   * @throws dev.idem.IdemException if a source cannot start
   */
  public void startSources() {
    List<EventSource> started = new ArrayList<>();
    try {
      for (EventSource s : sources) {
        s.start();
        started.add(s);
        LOG.info("source of pipeline {} started", s.pipeline());
      }
    } catch (RuntimeException e) {
      started.forEach(EventSource::close);
      throw e;
    }
  }

  /**
   * Stops the sources (so no new event arrives), then the dispatchers, then closes the sinks, then
   * the stores; logs and goes on at failures.
   */
  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>(sources);
    order.addAll(dispatchers);
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
