package dev.idem.server.support;

import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceRuntime;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/** A service on a random port, its pipelines from YAML, wired with test parts. */
public final class TestService implements AutoCloseable {
  public final SwitchableStore store = new SwitchableStore();
  public final Map<String, RecordingSink> sinks = new LinkedHashMap<>();
  public final IdemServer server;
  public final Http http;

  private TestService(String yaml, @Nullable String token, UnaryOperator<ServerSettings> listener) {
    IdemConfig config = ConfigLoader.parse("test.yaml", yaml, name -> null);
    IdemMetrics metrics = new IdemMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    List<Pipeline> pipelines = new ArrayList<>();
    for (PipelineSettings p : config.pipelines()) {
      RecordingSink sink = new RecordingSink();
      sinks.put(p.id(), sink);
      Pipeline.Builder b =
          Pipeline.builder(p)
              .keys(TestParts.idField())
              .deliverer(TestParts.retrying(sink, p.deliver().retry().retries()));
      if (p.dedup() != null) {
        b.dedup(
            Deduplicator.builder(store, Scope.of(p.id()))
                .config(p.dedup().config())
                .listener(metrics.dedupListener())
                .build(),
            store);
      }
      pipelines.add(b.build());
    }
    ServiceRuntime runtime =
        ServiceRuntime.ofWebhooks(
            pipelines,
            List.of(store),
            List.of(),
            List.of(),
            metrics,
            (PrometheusMeterRegistry) metrics.registry(),
            payload -> {
              throw new IllegalStateException("no outbox in this test");
            });
    server =
        IdemServer.start(
            listener.apply(
                new ServerSettings("127.0.0.1", 0, token, 16, Duration.ofSeconds(5), null)),
            runtime);
    http = new Http(server.uri());
  }

  /** Starts a service. */
  public static TestService start(String yaml, @Nullable String adminToken) {
    return new TestService(yaml, adminToken, s -> s);
  }

  /** Starts a service with changed listener settings (limits, management port). */
  public static TestService start(
      String yaml, @Nullable String adminToken, UnaryOperator<ServerSettings> server) {
    return new TestService(yaml, adminToken, server);
  }

  @Override
  public void close() {
    server.close();
  }
}
