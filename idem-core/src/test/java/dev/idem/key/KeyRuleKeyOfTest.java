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
        .as("a raw value is a string's characters")
        .isEqualTo(rule.derive(event("{\"order\":{\"id\":\"17\"}}", Map.of())))
        .isNotEqualTo(rule.derive(event("{\"order\":{\"id\":17}}", Map.of())));
  }

  @Test
  void jsonValuesKeepTheirTypeAndExactValue() {
    KeyRule rule = KeyRule.parse("source.order.id");

    assertThat(rule.keyOfJson("[820982911946154508]"))
        .isEqualTo(rule.derive(event("{\"order\":{\"id\":820982911946154508}}", Map.of())))
        .isEqualTo(rule.keyOfJson(" [ 8.20982911946154508E+17 ] "))
        .isNotEqualTo(rule.keyOfJson("[820982911946154509]"))
        .isNotEqualTo(rule.keyOfJson("[\"820982911946154508\"]"));
    assertThat(rule.keyOfJson("[\"A-17\"]")).isEqualTo(rule.keyOf(List.of("A-17")));
    assertThat(rule.keyOfJson("[{\"b\":1,\"a\":true}]"))
        .isEqualTo(rule.derive(event("{\"order\":{\"id\":{\"a\":true,\"b\":1.0}}}", Map.of())));
  }

  @Test
  void aCompositeRuleTakesAJsonArrayOfTypedValues() {
    KeyRule rule = KeyRule.parse(List.of("shop", "header(\"X-Id\")", "n"));
    InboundEvent e = event("{\"shop\":\"s1\",\"n\":42}", Map.of("x-id", "m9"));

    assertThat(rule.keyOfJson("[\"s1\",\"m9\",42]")).isEqualTo(rule.derive(e));
    assertThat(rule.keyOfJson("[\"s1\",\"m9\",\"42\"]")).isNotEqualTo(rule.derive(e));
    assertThatThrownBy(() -> rule.keyOfJson("[\"s1\",9,42]"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("value 2 for header(\"X-Id\") must be a JSON string");
    assertThatThrownBy(() -> rule.keyOfJson("[\"s1\",\"m9\"]"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("takes 3 values")
        .hasMessageContaining("got 2");
    assertThatThrownBy(() -> rule.keyOfJson("[\"s1\",\"m9\",null]"))
        .hasMessageContaining("value 3 for n is null");
    assertThatThrownBy(() -> rule.keyOfJson("[\" \",\"m9\",1]")).hasMessageContaining("blank key");
    assertThatThrownBy(() -> rule.keyOfJson("{\"shop\":\"s1\"}"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("not a JSON array");
    assertThatThrownBy(() -> rule.keyOfJson("[s1"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("not JSON");
    assertThatThrownBy(() -> rule.keyOfJson("[\"s1\",\"m9\",1e400]"))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("outside the range");
    assertThatThrownBy(() -> KeyRule.defaultKey().keyOfJson("[1]"))
        .isInstanceOf(IdemConfigException.class);
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
