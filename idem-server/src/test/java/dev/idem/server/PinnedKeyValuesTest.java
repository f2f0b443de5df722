package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.TestParts;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Keys are persisted: the key an event gets through the pipeline must never change for the same
 * body, whatever the pipeline reads the body with (issue 10 §1: one parse feeds the key, the
 * ordering key and the fingerprint). These digests were taken from the release before the body was
 * read in one pass; a change of any of them makes duplicates after an upgrade.
 */
class PinnedKeyValuesTest {
  static final String ORDER = "{\"id\":\"evt_1\",\"amount\":4200,\"currency\":\"eur\"}";
  static final String ORDER_RESPELLED =
      "{ \"currency\" : \"eur\", \"amount\" : 42.00e2, \"id\" : \"evt_1\" }";
  static final String MIXED =
      "{\"b\":[1,2.50,{\"z\":null,\"a\":true}],\"a\":\"\\u00e9\\n\",\"n\":820982911946154509}";
  static final String NUMBERS = "[1e30,-0,0.000001,1E-7,\"x\"]";

  static Pipeline pipeline(String dedup) {
    IdemConfig c =
        ConfigLoader.parse(
            "pin.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: pin
                source: { webhook: { path: /pin } }
                %s
                deliver: { stdout: {} }
            """
                .formatted(dedup),
            n -> null);
    PipelineSettings p = c.pipelines().get(0);
    return Pipeline.builder(p)
        .keys(ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system()))
        .deliverer(TestParts.retrying(new RecordingSink(), 0))
        .build();
  }

  static String keyOf(Pipeline p, String body) {
    InboundRequest event =
        new InboundRequest(
            body.getBytes(StandardCharsets.UTF_8), name -> name.equals("X-Id") ? "h-1" : null);
    Outcome o = p.process(event);
    assertThat(o).as(body).isInstanceOf(Outcome.Accepted.class);
    return ((Outcome.Accepted) o).key().toHex();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "ORDER|4b52bc72a8e3a3e3bc3eb63d2599c2def0de838986cce671ac64f132e5546bfa",
        "ORDER_RESPELLED|4b52bc72a8e3a3e3bc3eb63d2599c2def0de838986cce671ac64f132e5546bfa",
        "MIXED|c2051c7acdf867d8759f006d9c8127f6d9ed05a5469f07b838d8dbfeb09b8c81",
        "NUMBERS|b5375b9b56fa3df19ebae3eb5308174d27a33c6e0bc78138f1173f8a34d9f44b",
        "STRING|65f9093ec118845060e9e73b6e5ae3f4c69d72f936f261873c1984a750c6591b",
        "NULL|bf20ab0113459bd97bbad5068120e1df6aeefa191f722bfd429f8fce55b2f724",
      })
  void theDefaultKeyOfABodyIsTheCanonicalHashItAlwaysWas(String body, String hex) {
    String json =
        switch (body) {
          case "ORDER" -> ORDER;
          case "ORDER_RESPELLED" -> ORDER_RESPELLED;
          case "MIXED" -> MIXED;
          case "NUMBERS" -> NUMBERS;
          case "STRING" -> "\"just a string\"";
          default -> "null";
        };

    assertThat(keyOf(pipeline(""), json)).isEqualTo(hex);
  }

  @Test
  void fieldAndCompositeKeysKeepTheirValues() {
    Pipeline field = pipeline("dedup: { key: source.id }");
    Pipeline composite = pipeline("dedup: { key: [id, header(\"X-Id\"), amount] }");

    for (String body : new String[] {ORDER, ORDER_RESPELLED}) {
      assertThat(keyOf(field, body))
          .isEqualTo("2a38f322a5db6a3f87a7d70349cba511b6f355f4836d541ef3e9b61c88530d1f");
      assertThat(keyOf(composite, body))
          .isEqualTo("bd3b5184d6f3965f7870a7f6f025e2373d3882d9b1c56e246f3e9b80a4291d64");
    }
  }
}
