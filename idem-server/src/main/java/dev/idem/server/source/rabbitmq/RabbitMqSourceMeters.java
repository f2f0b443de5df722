package dev.idem.server.source.rabbitmq;

import dev.idem.server.pipeline.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The RabbitMQ source's meters:
 *
 * <ul>
 *   <li>{@code idem_source_outcomes_total{pipeline,source="rabbitmq",outcome}}: what the pipeline
 *       decided for each message ({@code accepted}, {@code duplicate}, {@code in_flight}, {@code
 *       conflict}, {@code rejected}, {@code unavailable}, {@code failed}) and what the source did
 *       beyond an ack ({@code dead_lettered}: rejected to the queue's dead-letter exchange; {@code
 *       retried}: put back with a requeue after a delay);
 *   <li>{@code idem_source_redelivered_total{pipeline,source="rabbitmq"}}: messages that came with
 *       the {@code redelivered} flag;
 *   <li>{@code idem_source_lag{pipeline,source="rabbitmq",queue}}: the queue's ready messages, read
 *       every few seconds (NaN until known).
 * </ul>
 */
final class RabbitMqSourceMeters {

  /** What the source counts under {@code outcome}. */
  enum Kind {
    ACCEPTED,
    DUPLICATE,
    IN_FLIGHT,
    CONFLICT,
    REJECTED,
    UNAVAILABLE,
    FAILED,
    DEAD_LETTERED,
    RETRIED;

    String tag() {
      return name().toLowerCase(Locale.ROOT);
    }

    static Kind of(Outcome outcome) {
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
      }
      return FAILED;
    }
  }

  private final Counter[] counters = new Counter[Kind.values().length];
  private final Counter redelivered;
  private final AtomicLong depth = new AtomicLong(-1);

  RabbitMqSourceMeters(MeterRegistry registry, String pipeline, String queue) {
    for (Kind k : Kind.values()) {
      counters[k.ordinal()] =
          Counter.builder("idem_source_outcomes")
              .description("Events a pulling source read, by outcome and by what it did with them")
              .tag("pipeline", pipeline)
              .tag("source", "rabbitmq")
              .tag("outcome", k.tag())
              .register(registry);
    }
    redelivered =
        Counter.builder("idem_source_redelivered")
            .description("Messages the broker redelivered (AMQP redelivered flag)")
            .tag("pipeline", pipeline)
            .tag("source", "rabbitmq")
            .register(registry);
    Gauge.builder("idem_source_lag", depth, d -> d.get() < 0 ? Double.NaN : d.get())
        .description("Events waiting in the broker for this source (consumer lag, queue depth)")
        .tag("pipeline", pipeline)
        .tag("source", "rabbitmq")
        .tag("queue", queue)
        .register(registry);
  }

  void count(Outcome outcome) {
    count(Kind.of(outcome));
  }

  void count(Kind kind) {
    counters[kind.ordinal()].increment();
  }

  long total(Kind kind) {
    return (long) counters[kind.ordinal()].count();
  }

  void redelivered() {
    redelivered.increment();
  }

  long redeliveredTotal() {
    return (long) redelivered.count();
  }

  void depth(long messages) {
    depth.set(messages);
  }
}
