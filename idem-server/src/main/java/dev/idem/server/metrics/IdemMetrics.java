package dev.idem.server.metrics;

import dev.idem.DedupKey;
import dev.idem.DedupListener;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.deliver.DeliveryListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.ToDoubleFunction;

/**
 * The service's meters, registered per pipeline up front so that the hot path only increments
 * counters it already holds:
 *
 * <ul>
 *   <li>{@code idem_decisions_total{pipeline,decision}}: pass, duplicate, in_flight, conflict,
 *       committed, released, lease_lost, expired, evicted;
 *   <li>{@code idem_deliveries_total{pipeline,outcome}}: delivered, retried, failed, dead_lettered;
 *       {@code idem_delivery_seconds{pipeline}}: from first attempt to success (histogram);
 *   <li>{@code idem_store_seconds{pipeline,operation}}: store latency of reserve (histogram);
 *   <li>{@code idem_outbox_depth{pipeline}}: entries waiting in the outbox (gauge);
 *   <li>{@code idem_http_requests_total{pipeline,status}}: webhook answers by status;
 *   <li>{@code idem_store_unavailable_total{pipeline}}: events answered "store unavailable"
 *       (nothing was committed; the sender is told to retry);
 *   <li>{@code idem_evictions_before_ttl_total{pipeline}}: committed keys evicted (memory store,
 *       {@code max_keys}) while their window still ran, so a late duplicate of them passes as new.
 * </ul>
 *
 * <p>{@code deploy/grafana/idem.json} and {@code deploy/prometheus/alerts.yml} are built over these
 * names; {@code MonitoringFilesTest} keeps them in step.
 */
public final class IdemMetrics {
  /** The dedup decisions and settlements counted per pipeline. */
  public enum DecisionKind {
    /** A new key was reserved. */
    PASS,
    /** A duplicate was suppressed. */
    DUPLICATE,
    /** Turned away: the key was in flight. */
    IN_FLIGHT,
    /** The key was reused with another payload. */
    CONFLICT,
    /** A reservation was committed. */
    COMMITTED,
    /** A reservation was released. */
    RELEASED,
    /** A settlement came after the lease ran out. */
    LEASE_LOST,
    /** A lease or TTL ran out. */
    EXPIRED,
    /** A committed key was evicted (memory store). */
    EVICTED;

    // Made once: the tag is read for every decision recorded on the request path.
    private final String tag = name().toLowerCase(Locale.ROOT);

    /**
     * Returns the tag value.
     *
     * @return the lower-case name
     */
    public String tag() {
      return tag;
    }
  }

  /** The delivery outcomes counted per pipeline. */
  public enum DeliveryKind {
    /** Delivered. */
    DELIVERED,
    /** An attempt failed and will be retried. */
    RETRIED,
    /** Given up (sync: the key was released). */
    FAILED,
    /** Given up and moved to the dead letters (async). */
    DEAD_LETTERED;

    // Made once: the tag is read for every decision recorded on the request path.
    private final String tag = name().toLowerCase(Locale.ROOT);

    /**
     * Returns the tag value.
     *
     * @return the lower-case name
     */
    public String tag() {
      return tag;
    }
  }

  private final MeterRegistry registry;
  private final TimeSource time;
  private final Map<String, PipelineMeters> pipelines = new ConcurrentHashMap<>();

  /**
   * Creates the meters' holder, on the system clock.
   *
   * @param registry where meters are registered
   */
  public IdemMetrics(MeterRegistry registry) {
    this(registry, TimeSource.system());
  }

  /**
   * Creates the meters' holder.
   *
   * @param registry where meters are registered
   * @param time the clock that stamps {@linkplain PipelineMeters#recent() recent decisions}
   */
  public IdemMetrics(MeterRegistry registry, TimeSource time) {
    this.registry = registry;
    this.time = time;
  }

  /**
   * Returns the registry.
   *
   * @return the meter registry
   */
  public MeterRegistry registry() {
    return registry;
  }

  /**
   * Registers a pipeline's meters (idempotent).
   *
   * @param pipeline the pipeline id
   * @return its meters
   */
  public PipelineMeters pipeline(String pipeline) {
    // Looked up on every decision: a plain get first, so no capturing lambda is made per call.
    PipelineMeters m = pipelines.get(pipeline);
    if (m != null) {
      return m;
    }
    return pipelines.computeIfAbsent(pipeline, p -> new PipelineMeters(registry, p, time));
  }

  /**
   * Registers a gauge of a pipeline's outbox depth.
   *
   * @param pipeline the pipeline id
   * @param source the object to read
   * @param depth reads the depth from the source
   * @param <T> the source's type
   */
  public <T> void outboxDepth(String pipeline, T source, ToDoubleFunction<T> depth) {
    Gauge.builder("idem_outbox_depth", source, depth)
        .description("Entries waiting in the pipeline's outbox")
        .tag("pipeline", pipeline)
        .register(registry);
  }

  /**
   * Returns a dedup listener that counts every scope's decisions under its pipeline.
   *
   * @return the listener
   */
  public DedupListener dedupListener() {
    return new DedupListener() {
      private PipelineMeters of(Scope scope) {
        return pipeline(scope.pipeline());
      }

      private void seen(Scope scope, DedupKey key, DecisionKind kind) {
        of(scope).decided(key, kind);
      }

      @Override
      public void onPass(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.PASS);
      }

      @Override
      public void onDuplicate(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.DUPLICATE);
      }

      @Override
      public void onInFlight(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.IN_FLIGHT);
      }

      @Override
      public void onConflict(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.CONFLICT);
      }

      @Override
      public void onCommitted(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.COMMITTED);
      }

      @Override
      public void onReleased(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.RELEASED);
      }

      @Override
      public void onLeaseLost(Scope scope, DedupKey key) {
        seen(scope, key, DecisionKind.LEASE_LOST);
      }

      @Override
      public void onExpired(Scope scope, DedupKey key, boolean leaseExpired) {
        of(scope).count(DecisionKind.EXPIRED);
      }

      @Override
      public void onEvicted(Scope scope, DedupKey key, boolean beforeTtl) {
        PipelineMeters m = of(scope);
        m.count(DecisionKind.EVICTED);
        if (beforeTtl) {
          m.evictedBeforeTtl.increment();
        }
      }
    };
  }

  /**
   * Returns a delivery listener that counts outcomes and records latency per pipeline.
   *
   * @return the listener
   */
  public DeliveryListener deliveryListener() {
    return new DeliveryListener() {
      @Override
      public void onDelivered(String pipeline, int attempts, Duration latency) {
        PipelineMeters m = pipeline(pipeline);
        m.count(DeliveryKind.DELIVERED);
        m.deliveryLatency.record(latency);
      }

      @Override
      public void onRetry(String pipeline, int attempt, String error) {
        pipeline(pipeline).count(DeliveryKind.RETRIED);
      }

      @Override
      public void onGaveUp(String pipeline, int attempts, String error, boolean deadLettered) {
        pipeline(pipeline).count(deadLettered ? DeliveryKind.DEAD_LETTERED : DeliveryKind.FAILED);
      }
    };
  }

  /** One pipeline's meters. */
  public static final class PipelineMeters {
    private final MeterRegistry registry;
    private final String pipeline;
    private final Counter[] decisions = new Counter[DecisionKind.values().length];
    private final Counter[] deliveries = new Counter[DeliveryKind.values().length];
    private final Timer deliveryLatency;
    private final Timer reserveLatency;
    private final Counter storeUnavailable;
    private final Counter evictedBeforeTtl;
    private final Counter stale;
    private final Counter gapReleased;
    private final AtomicReferenceArray<Counter> statuses = new AtomicReferenceArray<>(600);
    private final TimeSource time;
    private final RecentDecisions recent = new RecentDecisions(RecentDecisions.DEFAULT_CAPACITY);

    PipelineMeters(MeterRegistry registry, String pipeline, TimeSource time) {
      this.registry = registry;
      this.pipeline = pipeline;
      this.time = time;
      for (DecisionKind k : DecisionKind.values()) {
        decisions[k.ordinal()] =
            Counter.builder("idem_decisions")
                .description("Dedup decisions and settlements")
                .tag("pipeline", pipeline)
                .tag("decision", k.tag())
                .register(registry);
      }
      for (DeliveryKind k : DeliveryKind.values()) {
        deliveries[k.ordinal()] =
            Counter.builder("idem_deliveries")
                .description("Delivery outcomes")
                .tag("pipeline", pipeline)
                .tag("outcome", k.tag())
                .register(registry);
      }
      deliveryLatency =
          Timer.builder("idem_delivery")
              .description("Time from the first delivery attempt to success")
              .tag("pipeline", pipeline)
              .publishPercentileHistogram()
              .minimumExpectedValue(Duration.ofMillis(1))
              .maximumExpectedValue(Duration.ofMinutes(10))
              .register(registry);
      reserveLatency =
          Timer.builder("idem_store")
              .description("Store latency")
              .tag("pipeline", pipeline)
              .tag("operation", "reserve")
              .publishPercentileHistogram()
              .minimumExpectedValue(Duration.ofNanos(10_000))
              .maximumExpectedValue(Duration.ofSeconds(10))
              .register(registry);
      storeUnavailable =
          Counter.builder("idem_store_unavailable")
              .description("Events answered store unavailable (nothing committed)")
              .tag("pipeline", pipeline)
              .register(registry);
      evictedBeforeTtl =
          Counter.builder("idem_evictions_before_ttl")
              .description("Committed keys evicted by max_keys while their window still ran")
              .tag("pipeline", pipeline)
              .register(registry);
      stale =
          Counter.builder("idem_ordering_stale")
              .description("Events dropped as stale by sequence mode (older than their key's last)")
              .tag("pipeline", pipeline)
              .register(registry);
      gapReleased =
          Counter.builder("idem_ordering_gap_released")
              .description("Early events processed after gap_timeout without their gap filled")
              .tag("pipeline", pipeline)
              .register(registry);
    }

    /** Counts an event dropped as stale by sequence mode. */
    public void stale() {
      stale.increment();
    }

    /** Counts an early event processed after gap_timeout with its gap still open. */
    public void gapReleased() {
      gapReleased.increment();
    }

    /**
     * Returns the registry these meters are on (a source registers its own meters there).
     *
     * @return the registry
     */
    public MeterRegistry registry() {
      return registry;
    }

    /**
     * Returns the pipeline id.
     *
     * @return the id
     */
    public String pipeline() {
      return pipeline;
    }

    /** Counts an event answered "store unavailable". */
    public void storeUnavailable() {
      storeUnavailable.increment();
    }

    /**
     * Counts a decision.
     *
     * @param kind what was decided
     */
    public void count(DecisionKind kind) {
      decisions[kind.ordinal()].increment();
    }

    /**
     * Counts a decision about a key and keeps it among the {@linkplain #recent() recent decisions}.
     *
     * @param key the key
     * @param kind what was decided
     */
    public void decided(DedupKey key, DecisionKind kind) {
      count(kind);
      recent.record(time.wallMillis(), key, kind.tag());
    }

    /**
     * Returns the pipeline's last decisions (pass, duplicate, in flight, conflict, committed,
     * released, lease lost), for the console.
     *
     * @return the ring of recent decisions
     */
    public RecentDecisions recent() {
      return recent;
    }

    /**
     * Counts a delivery outcome.
     *
     * @param kind the outcome
     */
    public void count(DeliveryKind kind) {
      deliveries[kind.ordinal()].increment();
    }

    /**
     * Records a reserve's latency.
     *
     * @param nanos how long it took
     */
    public void reserveTook(long nanos) {
      reserveLatency.record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Counts a webhook answer.
     *
     * @param status the HTTP status
     */
    public void answered(int status) {
      int i = status >= 100 && status < 600 ? status : 599;
      Counter c = statuses.get(i);
      if (c == null) {
        // Registration is idempotent, so a race only registers the same counter twice.
        c =
            Counter.builder("idem_http_requests")
                .description("Webhook answers by status")
                .tag("pipeline", pipeline)
                .tag("status", Integer.toString(i))
                .register(registry);
        statuses.set(i, c);
      }
      c.increment();
    }

    /**
     * Returns the counts so far, for {@code /admin/stats} and the console.
     *
     * @return decision and delivery names to counts, then {@code evicted_before_ttl} and {@code
     *     store_unavailable}
     */
    public Map<String, Long> counts() {
      Map<String, Long> out = new LinkedHashMap<>();
      for (DecisionKind k : DecisionKind.values()) {
        out.put(k.tag(), (long) decisions[k.ordinal()].count());
      }
      for (DeliveryKind k : DeliveryKind.values()) {
        out.put(k.tag(), (long) deliveries[k.ordinal()].count());
      }
      out.put("evicted_before_ttl", (long) evictedBeforeTtl.count());
      out.put("store_unavailable", (long) storeUnavailable.count());
      return out;
    }
  }
}
