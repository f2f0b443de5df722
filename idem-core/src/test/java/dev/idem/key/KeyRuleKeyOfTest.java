package dev.idem.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KeyRuleKeyOfTest {

  private static InboundEvent event(String json, Map<String, String> headers) {
    return InboundEvent.of(json.getBytes(StandardCharsets.UTF_8), headers);
  }

  @Test
  void aFieldRuleGivesTheSameKeyFromTheRawValueAsFromTheEvent() {
    KeyRule rule = KeyRule.parse("source.order.id");

    assertThat(rule.keyOf(List.of("A-17")))
        .isEqualTo(rule.derive(event("{\"order\":{\"id\":\"A-17\"}}", Map.of())));
    assertThat(rule.keyOf(List.of("17")))
        .isEqualTo(rule.derive(event("{\"order\":{\"id\":17}}", Map.of())));
  }

  @Test
  void aCompositeRuleTakesOneValuePerEntryInOrder() {
    KeyRule rule = KeyRule.parse(List.of("shop", "header(\"X-Id\")"));
    InboundEvent e = event("{\"shop\":\"s1\"}", Map.of("x-id", "m9"));

    assertThat(rule.keyOf(List.of("s1", "m9"))).isEqualTo(rule.derive(e));
    assertThat(rule.keyOf(List.of("m9", "s1"))).isNotEqualTo(rule.derive(e));
  }

  @Test
  void aFunctionRuleTakesItsOneText() {
    KeyRule rule = KeyRule.of(ev -> ev.header("X-Order"));

    assertThat(rule.keyOf(List.of("o-1")))
        .isEqualTo(rule.derive(event("{}", Map.of("X-Order", "o-1"))))
        .isEqualTo(KeyEncoding.ofString("o-1"));
  }

  @Test
  void theWrongNumberOfValuesOrABlankValueIsAKeyError() {
    KeyRule rule = KeyRule.parse(List.of("a", "b"));

    assertThatThrownBy(() -> rule.keyOf(List.of("x")))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("takes 2 values");
    assertThatThrownBy(() -> rule.keyOf(List.of("x", " ")))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("blank key");
  }

  @Test
  void theDefaultKeyHasNoRawValues() {
    assertThatThrownBy(() -> KeyRule.defaultKey().keyOf(List.of("x")))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("hex digest");
  }
}
