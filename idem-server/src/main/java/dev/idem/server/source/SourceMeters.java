package dev.idem.server.source;

import dev.idem.server.pipeline.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import java.util.Locale;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

/**
 * A pulling source's meters, shared by every broker source:
 *
 * <ul>
 *   <li>{@code idem_source_outcomes_total{pipeline,source,outcome}}: what the pipeline decided for
 *       each event the source read ({@code accepted}, {@code duplicate}, {@code in_flight}, {@code
 *       conflict}, {@code rejected}, {@code unavailable}, {@code failed}) and what the source did
 *       about it beyond an acknowledgement ({@code dead_lettered}, {@code skipped}, {@code
 *       retried});
 *   <li>{@code idem_source_lag{pipeline,source,...}}: how many events wait in the broker (consumer
 *       lag of a partition, queue depth), a gauge the source feeds through {@link #lag}.
 * </ul>
 *
 * <p>Counters are registered up front, so counting on the hot path is one increment.
 */
public final class SourceMeters {

  /** What a source counts under {@code outcome}. */
  public enum Kind {
    /** The event was new and is done. */
    ACCEPTED,
    /** The event's key was already committed. */
    DUPLICATE,
    /** Another worker holds the key; the event will be read again. */
    IN_FLIGHT,
    /** The key was used with a different payload. */
    CONFLICT,
    /** The event is bad as it is (not JSON, no key, ...). */
    REJECTED,
    /** The store did not answer; the event will be read again. */
    UNAVAILABLE,
    /** Transform or delivery failed; the key was released. */
    FAILED,
    /** The source published the event to its dead-letter destination. */
    DEAD_LETTERED,
    /** The source logged the event and acknowledged it without a dead letter. */
    SKIPPED,
    /** The source put the event back to be read again (after in-flight, unavailable, failed). */
    RETRIED;

    /**
     * Returns the tag value.
     *
     * @return e.g. {@code in_flight}
     */
    public String tag() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns the kind of a pipeline outcome.
     *
     * @param outcome the outcome
     * @return its kind
     */
    public static Kind of(Outcome outcome) {
      if (outcome instanceof Outcome.Accepted) {
        return ACCEPTED;
      } else if (outcome instanceof Outcome.Duplicate) {
        return DUPLICATE;
      } else if (outcome instanceof Outcome.InFlight) {
        return IN_FLIGHT;
      } else if (outcome instanceof Outcome.Conflict) {
        return CONFLICT;
      } else if (outcome instanceof Outcome.Rejected) {
        return REJECTED;
      } else if (outcome instanceof Outcome.Unavailable) {
        return UNAVAILABLE;
      } else {
        return FAILED;
      }
    }
  }

  private final MeterRegistry registry;
  private final String pipeline;
  private final String source;
  private final Counter[] counters = new Counter[Kind.values().length];

  /**
   * Registers a source's counters.
   *
   * @param registry the service's registry ({@code IdemMetrics.registry()})
   * @param pipeline the pipeline id
   * @param source the source type, e.g. {@code kafka}
   */
  public SourceMeters(MeterRegistry registry, String pipeline, String source) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.source = Objects.requireNonNull(source, "source");
    for (Kind k : Kind.values()) {
      counters[k.ordinal()] =
          Counter.builder("idem_source_outcomes")
              .description("Events a pulling source read, by outcome and by what it did with them")
              .tag("pipeline", pipeline)
              .tag("source", source)
              .tag("outcome", k.tag())
              .register(registry);
    }
  }

  /**
   * Registers the counters of a pipeline's source on the service's registry.
   *
   * @param context the context {@link Sources#open} hands the source
   * @param source the source type, e.g. {@code kafka}
   * @return the meters
   */
  public static SourceMeters of(Sources.Context context, String source) {
    return new SourceMeters(context.meters().registry(), context.meters().pipeline(), source);
  }

  /**
   * Counts a pipeline outcome.
   *
   * @param outcome the outcome
   */
  public void count(Outcome outcome) {
    count(Kind.of(outcome));
  }

  /**
   * Counts one event of a kind.
   *
   * @param kind the kind
   */
  public void count(Kind kind) {
    counters[kind.ordinal()].increment();
  }

  /**
   * Returns the count of a kind so far (tests, {@code /admin/stats}).
   *
   * @param kind the kind
   * @return the count
   */
  public long total(Kind kind) {
    return (long) counters[kind.ordinal()].count();
  }

  /**
   * Registers a gauge {@code idem_source_lag{pipeline,source,<tags>}} of the events waiting in the
   * broker. Hold the returned meter and {@link #remove} it when the source stops reading that
   * partition or queue.
   *
   * @param tags further tags, key value pairs, e.g. {@code "partition", "orders-0"}
   * @param obj the object to read
   * @param lag reads the lag; NaN when unknown
   * @param <T> the object's type
   * @return the gauge
   */
  public <T> Meter lag(Iterable<Tag> tags, T obj, ToDoubleFunction<T> lag) {
    return Gauge.builder("idem_source_lag", obj, lag)
        .description("Events waiting in the broker for this source (consumer lag, queue depth)")
        .tag("pipeline", pipeline)
        .tag("source", source)
        .tags(tags)
        .register(registry);
  }

  /**
   * Registers a lag gauge with one further tag.
   *
   * @param tagKey the tag's name, e.g. {@code partition}
   * @param tagValue its value
   * @param obj the object to read
   * @param lag reads the lag
   * @param <T> the object's type
   * @return the gauge
   */
  public <T> Meter lag(String tagKey, String tagValue, T obj, ToDoubleFunction<T> lag) {
    return lag(Tags.of(tagKey, tagValue), obj, lag);
  }

  /**
   * Removes a gauge this source registered.
   *
   * @param meter the gauge {@link #lag} returned
   */
  public void remove(Meter meter) {
    registry.remove(meter);
  }
}
