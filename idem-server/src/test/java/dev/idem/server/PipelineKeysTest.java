package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.KeyDerivationException;
import dev.idem.key.Principal;
import dev.idem.server.config.KeySpec;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.support.TestParts;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** Pipeline key rules on the core's KeyRule: the raw form gives the key the event gets. */
class PipelineKeysTest {
  static InboundRequest event(String body, String... headers) {
    Map<String, String> h = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    for (int i = 0; i < headers.length; i += 2) {
      h.put(headers[i], headers[i + 1]);
    }
    return new InboundRequest(body.getBytes(StandardCharsets.UTF_8), h::get);
  }

  @Test
  void theRawKeyFormGivesTheKeyTheEventGets() {
    EventKeys single = PipelineKeys.of(KeySpec.single("source.order.id"), null);
    EventKeys composite =
        PipelineKeys.of(
            new KeySpec(List.of("source.shop", "header(\"X-Topic\")", "source.n"), true), null);
    EventKeys header = PipelineKeys.of(KeySpec.single("header(\"X-Id\")"), null);

    assertThat(single.fromRaw("o-9"))
        .isEqualTo(single.derive(event("{\"order\":{\"id\":\"o-9\"}}")));
    assertThat(composite.fromRaw("[\"s1\",\"orders/create\",42]"))
        .isEqualTo(
            composite.derive(event("{\"shop\":\"s1\",\"n\":42}", "X-Topic", "orders/create")));
    assertThat(composite.fromRaw("[\"s1\",\"orders/create\",\"42\"]"))
        .as("the string \"42\" is not the number 42")
        .isNotEqualTo(
            composite.derive(event("{\"shop\":\"s1\",\"n\":42}", "X-Topic", "orders/create")));
    assertThat(header.fromRaw("m-1")).isEqualTo(header.derive(event("{}", "x-id", "m-1")));
    assertThat(single.fromRaw("o-9")).isNotEqualTo(header.fromRaw("o-9"));
    assertThatThrownBy(() -> composite.fromRaw("s1"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("JSON array of its 3 parts");
  }

  @Test
  void aMissingOrBlankValueIsNotAKey() {
    EventKeys single = PipelineKeys.of(KeySpec.single("source.id"), null);

    assertThatThrownBy(() -> single.derive(event("{\"other\":1}")))
        .isInstanceOf(KeyDerivationException.class);
    assertThatThrownBy(() -> single.derive(event("{\"id\":\"  \"}")))
        .isInstanceOf(KeyDerivationException.class);
    assertThatThrownBy(() -> single.fromRaw(" ")).isInstanceOf(KeyDerivationException.class);
  }

  @Test
  void withCallersAndNoKeyTheChainAndTheBodyAreTheKeyEvenForASignedWebhook() {
    EventKeys keys = PipelineKeys.of(null, TestParts.headerVerifier(), true);
    InboundRequest body = event("{\"a\":1}");
    Principal alice = new Principal("https://idp", "alice");
    Principal gateway = new Principal("https://idp", "gateway");

    assertThat(keys.derive(body.withPrincipals(List.of(alice))))
        .isEqualTo(keys.derive(event("{ \"a\" : 1.0 }").withPrincipals(List.of(alice))))
        .isNotEqualTo(keys.derive(body.withPrincipals(List.of(alice, gateway))))
        .isNotEqualTo(keys.derive(body.withPrincipals(List.of(gateway))))
        .isNotEqualTo(keys.derive(body));
    assertThat(keys.describe()).contains("principal chain");
  }

  @Test
  void aSignedWebhookWithoutAKeyIsKeyedByItsDeliveryId() {
    EventKeys signed = PipelineKeys.of(null, TestParts.headerVerifier());

    assertThat(signed.derive(event("{\"a\":1}", "webhook-id", "msg_1")))
        .isEqualTo(signed.derive(event("{\"b\":2}", "webhook-id", "msg_1")))
        .isEqualTo(signed.fromRaw("msg_1"));
    assertThatThrownBy(() -> signed.derive(event("{}")))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("webhook-id");
  }

  @Test
  void anUnsignedWebhookWithoutAKeyIsKeyedByItsCanonicalBody() {
    EventKeys plain = PipelineKeys.of(null, null);

    assertThat(plain.derive(event("{\"a\":1,\"b\":[1.0,2]}")))
        .isEqualTo(plain.derive(event("{ \"b\": [1, 2e0], \"a\": 1 }")));
    assertThat(plain.derive(event("{\"a\":1}"))).isNotEqualTo(plain.derive(event("{\"a\":2}")));
    assertThatThrownBy(() -> plain.fromRaw("x")).hasMessageContaining("64-hex digest");
  }
}
