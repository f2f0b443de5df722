package dev.idem.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.Decision;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.key.CanonicalJson;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.TestParts;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The explainer's decisions, on a pipeline over the memory store, and that it changes nothing. */
class ExplainerTest {
  final MemoryDedupStore store = MemoryDedupStore.builder().build();
  final ManualTimeSource time = new ManualTimeSource();
  final RecordingSink sink = new RecordingSink();

  static PipelineSettings settings(String dedup) {
    return ConfigLoader.parse(
            "p.yaml",
            "store: { type: memory }\npipelines:\n  - id: p\n    source: { webhook: { path: /p } }\n"
                + "    dedup: "
                + dedup
                + "\n    deliver: { stdout: {} }\n",
            n -> null)
        .pipelines()
        .get(0);
  }

  Pipeline pipeline(PipelineSettings s) {
    Pipeline.Builder b =
        Pipeline.builder(s)
            .keys(TestParts.idField())
            .timeSource(time)
            .deliverer(TestParts.retrying(sink, 0))
            .dedup(
                Deduplicator.builder(store, Scope.of("p"))
                    .config(s.dedup().config())
                    .timeSource(time)
                    .build(),
                store);
    if (s.dedup().mode() == dev.idem.server.config.DedupMode.REPLAY) {
      b.fingerprints(CanonicalJson::fingerprint);
    }
    return b.build();
  }

  static Explainer.Event event(String json) {
    return new Explainer.Event(json.getBytes(StandardCharsets.UTF_8), Map.of(), List.of());
  }

  @Test
  void aHeldKeyIsInFlightWithItsTimesAndTheExplanationReservesNothing() {
    Pipeline p = pipeline(settings("{ key: source.id, lease: 30s }"));
    Explainer explainer = new Explainer(p, null, null, time);
    Decision.Acquired held = (Decision.Acquired) p.dedup().reserve(TestParts.keyOf("h"));

    ObjectNode answer = explainer.explain(event("{\"id\":\"h\"}"));

    assertThat(answer.get("decision").asText()).isEqualTo("in_flight");
    assertThat(answer.get("answer").get("status").asInt()).isEqualTo(409);
    assertThat(answer.get("state").get("lease_until").asText()).isNotBlank();
    // when the lease has run out, the key counts as new
    time.advance(Duration.ofSeconds(31));
    assertThat(explainer.explain(event("{\"id\":\"h\"}")).get("decision").asText())
        .isEqualTo("pass");
    held.reservation().release();
  }

  @Test
  void explainingANewKeyLeavesItAbsent() {
    Pipeline p = pipeline(settings("{ key: source.id }"));
    Explainer explainer = new Explainer(p, null, null, time);

    for (int i = 0; i < 3; i++) {
      assertThat(explainer.explain(event("{\"id\":\"n\"}")).get("decision").asText())
          .isEqualTo("pass");
    }

    assertThat(p.dedup().inspect(TestParts.keyOf("n"))).isEqualTo(KeyState.ABSENT);
    assertThat(sink.delivered()).isEmpty();
  }

  @Test
  void replayModeTellsAConflictFromADuplicate() {
    Pipeline p = pipeline(settings("{ key: source.id, mode: replay }"));
    Explainer explainer = new Explainer(p, null, null, time);
    p.process(
        new InboundRequest("{\"id\":\"r\",\"n\":1}".getBytes(StandardCharsets.UTF_8), n -> null));

    assertThat(explainer.explain(event("{\"n\":1,\"id\":\"r\"}")).get("decision").asText())
        .isEqualTo("duplicate");
    ObjectNode conflict = explainer.explain(event("{\"id\":\"r\",\"n\":2}"));
    assertThat(conflict.get("decision").asText()).isEqualTo("conflict");
    assertThat(conflict.get("answer").get("status").asInt()).isEqualTo(422);
  }

  @Test
  void aBadSignatureIsRejectedBeforeAnyKey() {
    Pipeline p = pipeline(settings("{ key: source.id }"));
    Explainer explainer = new Explainer(p, TestParts.headerVerifier(), null, time);

    ObjectNode bad = explainer.explain(event("{\"id\":\"s\"}"));
    ObjectNode good =
        explainer.explain(
            new Explainer.Event(
                "{\"id\":\"s\"}".getBytes(StandardCharsets.UTF_8),
                Map.of("x-test-signature", "valid"),
                List.of()));

    assertThat(bad.get("decision").asText()).isEqualTo("rejected");
    assertThat(bad.get("answer").get("status").asInt()).isEqualTo(401);
    assertThat(bad.has("key")).isFalse();
    assertThat(good.get("decision").asText()).isEqualTo("pass");
    assertThat(good.get("checks").get(0).get("result").asText()).isEqualTo("ok");
  }
}
