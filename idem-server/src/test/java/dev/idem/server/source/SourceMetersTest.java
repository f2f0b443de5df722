package dev.idem.server.source;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.server.pipeline.Outcome;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SourceMetersTest {

  @Test
  void countsOutcomesUnderPipelineSourceAndOutcome() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    SourceMeters meters = new SourceMeters(registry, "orders", "kafka");
    DedupKey key = DedupKey.ofWords(1, 2, 3, 4);

    meters.count(new Outcome.Accepted(key, null, false));
    meters.count(new Outcome.Duplicate(key, null));
    meters.count(new Outcome.Duplicate(key, null));
    meters.count(SourceMeters.Kind.DEAD_LETTERED);

    assertThat(
            registry
                .get("idem_source_outcomes")
                .tags("pipeline", "orders", "source", "kafka", "outcome", "duplicate")
                .counter()
                .count())
        .isEqualTo(2.0);
    assertThat(meters.total(SourceMeters.Kind.ACCEPTED)).isEqualTo(1);
    assertThat(meters.total(SourceMeters.Kind.DEAD_LETTERED)).isEqualTo(1);
    assertThat(meters.total(SourceMeters.Kind.IN_FLIGHT)).isZero();
  }

  @Test
  void lagGaugeReadsAndIsRemoved() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    SourceMeters meters = new SourceMeters(registry, "orders", "kafka");
    AtomicLong lag = new AtomicLong(42);

    Meter gauge = meters.lag("partition", "orders-0", lag, AtomicLong::get);

    assertThat(registry.get("idem_source_lag").tag("partition", "orders-0").gauge().value())
        .isEqualTo(42.0);
    meters.remove(gauge);
    assertThat(registry.find("idem_source_lag").gauge()).isNull();
  }
}
