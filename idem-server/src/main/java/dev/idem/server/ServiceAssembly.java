package dev.idem.server;

import dev.idem.DedupConfig;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.ordering.LocalOrderingGate;
import dev.idem.ordering.OrderingConfig;
import dev.idem.ordering.OrderingGate;
import dev.idem.server.auth.CallerAuthenticator;
import dev.idem.server.auth.HeaderCallers;
import dev.idem.server.auth.JwtCallers;
import dev.idem.server.auth.MtlsCallers;
import dev.idem.server.config.DedupMode;
import dev.idem.server.config.DedupSettings;
import dev.idem.server.config.DeliveryMode;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.KafkaSourceSettings;
import dev.idem.server.config.KeySpec;
import dev.idem.server.config.OrderingFailure;
import dev.idem.server.config.OrderingSettings;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.StoreSettings;
import dev.idem.server.config.WebhookSettings;
import dev.idem.server.deliver.DeliveryListener;
import dev.idem.server.deliver.Sink;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Deliverer;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.pipeline.PoisonKeys;
import dev.idem.server.pipeline.SequenceGuard;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.Sources;
import dev.idem.server.source.kafka.KafkaLocalState;
import dev.idem.server.source.kafka.KafkaSource;
import dev.idem.server.source.webhook.WebhookSource;
import dev.idem.server.tenant.TenantKeys;
import dev.idem.server.tenant.TenantScopedStore;
import dev.idem.server.transform.Transform;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a {@link ServiceRuntime} from a config: opens each distinct store once, builds every
 * pipeline's key rule, dedup step, ordering gate, transform, sink and deliverer, and starts the
 * background deliverers of asynchronous pipelines. If anything fails, what was opened is closed
 * again and the error names the pipeline. A Redis or JDBC store that cannot be reached does not
 * stop the start (unless its {@code fail_fast} is set): its pipelines answer 503 with {@code
 * Retry-After}, and {@code /health} reports it, until it opens in the background.
 */
public final class ServiceAssembly {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceAssembly.class);

  /**
   * The service's clock: the system clocks, a reserve reading the system clock too. The library's
   * {@link TimeSource#system()} has a reserve read the coarse clock instead, whose thread then
   * wakes every millisecond: that saves one system-clock read per reserve (tens of nanoseconds) and
   * costs a thousand wake-ups a second, each preempting a request thread (on a 2-core VM at 31,000
   * requests a second: 1.4% of the service's CPU, about 20 µs per wake-up). It pays off only past a
   * few hundred thousand reserves a second, which a service does not reach.
   */
  private static final TimeSource CLOCK = TimeSource.of(InstantSource.system(), System::nanoTime);

  private ServiceAssembly() {}

  /**
   * The clock the service runs on: the system clocks, without the coarse clock's thread.
   *
   * @return the service's clock
   */
  public static TimeSource clock() {
    return CLOCK;
  }

  /**
   * Assembles the service with the default edge and the {@linkplain #clock() service's clock}.
   *
   * @param config the config
   * @return the runtime, not yet serving
   * @throws IdemConfigException if a store cannot be opened or a part cannot be built
   */
  public static ServiceRuntime assemble(IdemConfig config) {
    return assemble(config, new DefaultEdge(), CLOCK);
  }

  /**
   * Assembles the service.
   *
   * @param config the config
   * @param edge makes sinks, deliverers, verifiers, transforms
   * @param time the clock
   * @return the runtime, not yet serving
   * @throws IdemConfigException if a store cannot be opened or a part cannot be built
   */
  public static ServiceRuntime assemble(IdemConfig config, Edge edge, TimeSource time) {
    PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    IdemMetrics metrics = new IdemMetrics(prometheus, time);
    List<AutoCloseable> background = new ArrayList<>();
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(prometheus);
    background.add(gc);
    new JvmMemoryMetrics().bindTo(prometheus);
    new JvmThreadMetrics().bindTo(prometheus);
    new ProcessorMetrics().bindTo(prometheus);
    new UptimeMetrics().bindTo(prometheus);

    DedupListener listener = metrics.dedupListener();
    Map<StoreSettings, DedupStore> stores =
        StoreRegistry.open(wanted(config), listener, time, true);
    List<AutoCloseable> sinks = new ArrayList<>();
    List<Pipeline> pipelines = new ArrayList<>();
    List<WebhookSource> webhooks = new ArrayList<>();
    List<EventSource> sources = new ArrayList<>();
    List<DedupStore> localStores = new ArrayList<>(); // source.kafka.state, for /health
    ScheduledExecutorService renewals = renewalTimer();
    background.add(renewals::shutdownNow);
    try {
      for (PipelineSettings p : config.pipelines()) {
        KafkaLocalState local = localState(p, metrics, time);
        if (local != null) {
          localStores.add(local.store());
        }
        Pipeline pipeline =
            pipeline(config, p, stores, local, edge, time, metrics, background, sinks, renewals);
        pipelines.add(pipeline);
        if (p.source() instanceof WebhookSettings w) {
          webhooks.add(webhook(config, pipeline, w, edge, time));
        } else if (local != null && p.source() instanceof KafkaSourceSettings k) {
          // The source opens, drives and closes the pipeline's partitioned keys.
          sources.add(
              new KafkaSource(
                  k, pipeline, new Sources.Context(metrics.pipeline(p.id()), time), local));
        } else {
          sources.add(
              Sources.open(
                  p.source(), pipeline, new Sources.Context(metrics.pipeline(p.id()), time)));
        }
      }
    } catch (RuntimeException e) {
      new ServiceRuntime(
              List.of(),
              List.of(),
              sources,
              new ArrayList<>(stores.values()),
              background,
              sinks,
              metrics,
              prometheus,
              edge::decode)
          .close();
      throw e;
    }
    List<DedupStore> all = new ArrayList<>(stores.values());
    all.addAll(localStores);
    return new ServiceRuntime(
        pipelines, webhooks, sources, all, background, sinks, metrics, prometheus, edge::decode);
  }

  /**
   * Builds only a pipeline's key rule (for {@code idem key}, {@code inspect}, {@code forget}).
   *
   * @param p the pipeline
   * @param edge makes the signature verifier whose delivery id is the default key
   * @param time the clock
   * @return the key rule
   * @throws IdemConfigException if the rule does not parse
   */
  public static EventKeys keys(PipelineSettings p, Edge edge, TimeSource time) {
    WebhookSettings w = p.webhook();
    SignatureVerifier verifier =
        w == null || w.signature() == null
            ? null
            : edge.verifier(Objects.requireNonNull(w.signature()), time);
    KeySpec spec = p.dedup() == null ? null : p.dedup().key();
    return withTenant(
        p,
        PipelineKeys.of(
            spec == null ? p.source().defaultKey() : spec, verifier, w != null && w.callers()));
  }

  /** One daemon thread that renews the leases of every pipeline's running work. */
  private static ScheduledExecutorService renewalTimer() {
    ScheduledThreadPoolExecutor timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "idem-lease-renewal");
              t.setDaemon(true);
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }

  /** The webhook edge of a pipeline: its signature check and caller authentication. */
  private static WebhookSource webhook(
      IdemConfig config, Pipeline pipeline, WebhookSettings w, Edge edge, TimeSource time) {
    try {
      SignatureVerifier verifier =
          w.signature() == null ? null : edge.verifier(Objects.requireNonNull(w.signature()), time);
      return new WebhookSource(
          pipeline,
          verifier,
          callers(config, pipeline.settings(), w, time),
          time,
          WebhookSource.DEFAULT_MAX_REJECTION_LINES_PER_SECOND);
    } catch (IdemConfigException e) {
      throw new IdemConfigException("pipeline " + pipeline.id() + ": " + e.getMessage());
    }
  }

  /** The source's caller authentication, or null for none. */
  private static @Nullable CallerAuthenticator callers(
      IdemConfig config, PipelineSettings p, WebhookSettings w, TimeSource time) {
    if (w.jwt() != null) {
      return JwtCallers.create(p.id(), Objects.requireNonNull(w.jwt()), time);
    }
    if (w.mtls() != null) {
      var tls = config.server().tls();
      return MtlsCallers.create(
          p.id(), Objects.requireNonNull(w.mtls()), tls == null ? null : tls.clientCa(), time);
    }
    if (w.principalHeader() != null) {
      return HeaderCallers.create(p.id(), Objects.requireNonNull(w.principalHeader()), time);
    }
    return null;
  }

  /** A tenanted pipeline's keys are its rule's keys scoped per tenant. */
  private static EventKeys withTenant(PipelineSettings p, EventKeys keys) {
    return p.tenant() == null ? keys : new TenantKeys(Objects.requireNonNull(p.tenant()), keys);
  }

  /**
   * Returns the store a pipeline's dedup step uses: the store itself, or for a tenanted pipeline
   * the view that keeps each tenant's keys in its own scope.
   *
   * @param p the pipeline
   * @param store the pipeline's store
   * @return the store its deduplicator uses
   */
  public static DedupStore dedupStore(PipelineSettings p, DedupStore store) {
    return p.tenant() == null ? store : new TenantScopedStore(store, Scope.of(p.id()));
  }

  /**
   * Opens one store on its own (for {@code idem inspect} and {@code forget}).
   *
   * @param settings the store
   * @return the open store; the caller closes it
   * @throws IdemConfigException if it cannot be opened
   */
  public static DedupStore openStore(StoreSettings settings) {
    return StoreRegistry.open(
            Map.of(settings, Map.of()), DedupListener.NOOP, TimeSource.system(), false)
        .get(settings);
  }

  /**
   * Returns whether a pipeline keeps its dedup keys in its Kafka source ({@code
   * source.kafka.state}) instead of a store.
   *
   * @param p the pipeline
   * @return true for {@code source.kafka.state}
   */
  public static boolean keepsKeysInSource(PipelineSettings p) {
    return p.source() instanceof KafkaSourceSettings k && k.state() != null;
  }

  /** The partitioned local keys of a {@code source.kafka.state} pipeline, else null. */
  private static @Nullable KafkaLocalState localState(
      PipelineSettings p, IdemMetrics metrics, TimeSource time) {
    if (p.dedup() == null || !(p.source() instanceof KafkaSourceSettings k) || k.state() == null) {
      return null;
    }
    return new KafkaLocalState(p.id(), k, metrics.registry(), time);
  }

  /** Each store used by a dedup step, with the memory bound of each pipeline on it. */
  static Map<StoreSettings, Map<Scope, Long>> wanted(IdemConfig config) {
    Map<StoreSettings, Map<Scope, Long>> wanted = new LinkedHashMap<>();
    for (PipelineSettings p : config.pipelines()) {
      DedupSettings d = p.dedup();
      if (d == null || keepsKeysInSource(p)) {
        continue; // no keys, or keys kept by source.kafka.state
      }
      Map<Scope, Long> bounds = wanted.computeIfAbsent(config.storeOf(p), s -> new HashMap<>());
      if (d.maxKeys() != null) {
        bounds.put(Scope.of(p.id()), d.maxKeys());
      }
    }
    return wanted;
  }

  private static Pipeline pipeline(
      IdemConfig config,
      PipelineSettings p,
      Map<StoreSettings, DedupStore> stores,
      @Nullable KafkaLocalState local,
      Edge edge,
      TimeSource time,
      IdemMetrics metrics,
      List<AutoCloseable> background,
      List<AutoCloseable> sinks,
      ScheduledExecutorService renewals) {
    try {
      metrics.pipeline(p.id());
      DedupSettings d = p.dedup();
      Pipeline.Builder b =
          Pipeline.builder(p)
              .keys(keys(p, edge, time))
              .meters(metrics.pipeline(p.id()))
              .timeSource(time)
              .renewals(renewals);
      OutboxStore outbox = null;
      if (d != null) {
        DedupStore store =
            dedupStore(
                p,
                local != null
                    ? local.store()
                    : Objects.requireNonNull(stores.get(config.storeOf(p))));
        Deduplicator dedup =
            Deduplicator.builder(store, Scope.of(p.id()))
                .config(d.config())
                .timeSource(time)
                .listener(metrics.dedupListener())
                .build();
        if (store instanceof OutboxStore o && store.capabilities().outbox()) {
          // With ordering, the pipeline gives each entry its ordering key, so the store keeps each
          // key's entries in order (on all instances, across restarts).
          outbox = o;
        }
        b.dedup(dedup, outbox);
        // A shared store answers over the network: a broker batch commits with one round trip.
        b.batchCommits(config.storeOf(p).type().shared());
        if (d.mode() == DedupMode.REPLAY) {
          b.canonicalFingerprints();
        }
      }
      OrderingSettings o = p.ordering();
      if (o != null) {
        OrderingGate gate =
            LocalOrderingGate.create(
                OrderingConfig.custom()
                    .mode(
                        o.mode() == dev.idem.server.config.OrderingMode.STRICT
                            ? dev.idem.ordering.OrderingMode.STRICT
                            : dev.idem.ordering.OrderingMode.BEST_EFFORT)
                    .lockTtl(o.lockTtl())
                    .build());
        background.add(gate);
        StoreSettings shared = config.storeOf(p);
        if (shared.type().shared() && p.deliver().mode() == DeliveryMode.SYNC) {
          // Several instances share the store: a key's turn is also a lock in it.
          Deduplicator locks =
              Deduplicator.builder(
                      Objects.requireNonNull(stores.get(shared), "ordering needs the store"),
                      Scope.of(p.id(), "ordering"))
                  .config(DedupConfig.custom().lease(o.lockTtl()).ttl(o.lockTtl()).build())
                  .timeSource(time)
                  .build();
          b.ordering(
              new SharedOrdering(p.id(), PipelineKeys.rule(o.key()), gate, locks, renewals, time));
        } else {
          b.ordering(new GateOrdering(PipelineKeys.rule(o.key()), gate));
        }
        if (p.deliver().mode() == DeliveryMode.SYNC && d != null) {
          // Poison keys: a failing event blocks only its ordering key, across instances.
          Deduplicator poison =
              Deduplicator.builder(
                      Objects.requireNonNull(stores.get(shared), "poison keys need the store"),
                      Scope.of(p.id(), "poison"))
                  .config(DedupConfig.custom().noTtl().lease(o.lockTtl()).build())
                  .timeSource(time)
                  .build();
          b.poison(
              new PoisonKeys(
                  p.id(),
                  poison,
                  o.maxAttempts(),
                  o.onFailure(),
                  p.deliver().retry().initialBackoff(),
                  p.deliver().retry().maxBackoff(),
                  o.lockTtl(),
                  time));
        }
        if (o.sequence() != null) {
          // The last sequence of each ordering key, kept in the pipeline's store without TTL.
          Deduplicator records =
              Deduplicator.builder(
                      Objects.requireNonNull(stores.get(shared), "sequence mode needs the store"),
                      Scope.of(p.id(), "sequence"))
                  .config(DedupConfig.custom().noTtl().lease(o.lockTtl()).build())
                  .timeSource(time)
                  .build();
          b.sequences(
              new SequenceGuard(
                  p.id(), Objects.requireNonNull(o.sequence()), records, o.gapTimeout(), time));
        }
      }
      if (p.jq() != null) {
        Transform t = edge.transform(Objects.requireNonNull(p.jq()));
        b.transform(t);
      }
      Sink sink = edge.sink(p.id(), p.deliver().sink());
      sinks.add(sink);
      DeliveryListener deliveries = metrics.deliveryListener();
      Deliverer deliverer = edge.deliverer(sink, p.deliver().retry(), deliveries);
      b.deliverer(deliverer);
      if (p.deliver().mode() == DeliveryMode.ASYNC) {
        OutboxStore box = Objects.requireNonNull(outbox, "async delivery needs an outbox");
        b.outboxEncoder(edge::encode);
        String queue = p.id();
        metrics.outboxDepth(queue, box, ob -> ob.depth(queue));
        Edge.Dispatcher dispatcher =
            edge.dispatcher(
                queue,
                box,
                sink,
                p.deliver().retry(),
                deliveries,
                config.storeOf(p).faults().claimTimeout(),
                p.ordering() != null && p.ordering().onFailure() == OrderingFailure.BLOCK);
        background.add(dispatcher);
        b.onEnqueued(dispatcher::wakeUp);
      }
      return b.build();
    } catch (IdemConfigException e) {
      throw new IdemConfigException("pipeline " + p.id() + ": " + e.getMessage());
    }
  }
}
