package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class KeyRuleTest {
  private static final String GIVE_A_KEY =
      "give a key: dedup.key (a field path, [paths], or header(\"X-Id\"))";

  private static final byte[] BODY =
      utf8("{\"id\":\"evt_1\",\"order\":{\"id\":1001,\"shop\":\"s1\"},\"amount\":19.9}");

  private static InboundEvent event(byte[] body, String... headers) {
    InboundEvent.Builder b = InboundEvent.builder().body(body);
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  @Nested
  class Header {
    @Test
    void namesAreCaseInsensitive() {
      DedupKey key = KeyRule.header("X-Message-Id").derive(event(BODY, "x-message-id", "m-1"));
      assertThat(KeyRule.header("x-MESSAGE-id").derive(event(BODY, "X-Message-Id", "m-1")))
          .isEqualTo(key)
          .isEqualTo(KeyEncoding.of(KeyPart.header("m-1")));
      assertThat(KeyRule.header("X-Message-Id").derive(event(BODY, "X-Message-Id", "m-2")))
          .isNotEqualTo(key);
    }

    @Test
    void theBodyIsNotRead() {
      assertThat(KeyRule.header("X-Id").derive(event(null, "X-Id", "1")))
          .isEqualTo(KeyRule.header("X-Id").derive(event(utf8("not json"), "X-Id", "1")));
    }

    @Test
    void missingOrBlankHeadersAreErrors() {
      assertThatThrownBy(() -> KeyRule.header("X-Id").derive(event(BODY)))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessage("no header X-Id in the event; send it or change dedup.key");
      assertThatThrownBy(() -> KeyRule.header("X-Id").derive(event(BODY, "X-Id", " \t")))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageStartingWith("blank key: header X-Id is blank");
    }

    @Test
    void badNamesAreConfigErrors() {
      for (String name : List.of("", "X Id", "X:Id", "X-Id\n", "é")) {
        assertThatThrownBy(() -> KeyRule.header(name))
            .as("'%s'", name)
            .isInstanceOf(IdemConfigException.class)
            .hasMessageContaining("is not valid");
      }
    }
  }

  @Nested
  class Fields {
    @Test
    void oneFieldKeysOnItsJsonValue() {
      assertThat(KeyRule.field("source.order.id").derive(event(BODY)))
          .isEqualTo(KeyRule.field("order.id").derive(event(utf8("{\"order\":{\"id\":1001.0}}"))))
          .isEqualTo(KeyEncoding.of(KeyPart.field(utf8("1001"))))
          .isNotEqualTo(KeyEncoding.of(KeyPart.stringField("1001")));
      assertThat(KeyRule.field("id").derive(event(BODY)))
          .isEqualTo(KeyEncoding.of(KeyPart.stringField("evt_1")));
    }

    @Test
    void compositePartsAreTypedAndLengthPrefixed() {
      KeyRule rule = KeyRule.fields(List.of("a", "b"));
      assertThat(rule.derive(event(utf8("{\"a\":\"ab\",\"b\":\"c\"}"))))
          .isNotEqualTo(rule.derive(event(utf8("{\"a\":\"a\",\"b\":\"bc\"}"))))
          .isEqualTo(KeyEncoding.of(KeyPart.stringField("ab"), KeyPart.stringField("c")));
      assertThat(KeyRule.fields(List.of("b", "a")).derive(event(utf8("{\"a\":\"1\",\"b\":\"2\"}"))))
          .isNotEqualTo(rule.derive(event(utf8("{\"a\":\"1\",\"b\":\"2\"}"))));
      assertThat(KeyRule.fields(List.of("a"))).isEqualTo(KeyRule.field("a"));
    }

    @Test
    void missingNullAndBlankFieldsAreErrors() {
      assertThatThrownBy(() -> KeyRule.field("order.nope").derive(event(BODY)))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("no field order.nope in the body");
      assertThatThrownBy(() -> KeyRule.field("a").derive(event(utf8("{\"a\":null}"))))
          .hasMessageContaining("field a is null");
      assertThatThrownBy(
              () -> KeyRule.fields(List.of("id", "a")).derive(event(utf8("{\"id\":1,\"a\":\"\"}"))))
          .hasMessageContaining("blank key: field a is blank");
    }

    @Test
    void aBodyThatIsNotJsonOrAbsentIsAnError() {
      assertThatThrownBy(() -> KeyRule.field("id").derive(event(utf8("id=1"))))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessage(
              "the body is not JSON (unexpected 'i' where a value was expected at byte 0), so field"
                  + " id cannot be read; send JSON or change dedup.key")
          .hasCauseInstanceOf(InvalidJsonException.class);
      for (byte[] none : new byte[][] {null, new byte[0]}) {
        assertThatThrownBy(() -> KeyRule.field("id").derive(event(none)))
            .isInstanceOf(KeyDerivationException.class)
            .hasMessageContaining("the event has no body, so field id cannot be read");
      }
    }
  }

  @Nested
  class Parse {
    @Test
    void readsTheYamlSpellings() {
      InboundEvent e = event(BODY, "X-Id", "h1");
      assertThat(KeyRule.parse("source.id").derive(e)).isEqualTo(KeyRule.field("id").derive(e));
      assertThat(KeyRule.parse("body.order.id").derive(e))
          .isEqualTo(KeyRule.field("order.id").derive(e));
      assertThat(KeyRule.parse(" header(\"X-Id\") ").derive(e))
          .isEqualTo(KeyRule.header("X-Id").derive(e));
      assertThat(KeyRule.parse("header('x-id')")).isEqualTo(KeyRule.parse("header(x-id)"));
    }

    @Test
    void compositesMixFieldsAndHeaders() {
      InboundEvent e = event(BODY, "X-Shop", "s1");
      KeyRule rule = KeyRule.parse(List.of("source.order.shop", "header(\"X-Shop\")", "order.id"));
      assertThat(rule.derive(e))
          .isEqualTo(
              KeyEncoding.of(
                  KeyPart.stringField("s1"), KeyPart.header("s1"), KeyPart.field(utf8("1001"))));
      assertThat(rule).hasToString("[order.shop, header(\"X-Shop\"), order.id]");
      assertThat(
              KeyRule.parse(
                  rule.toString().substring(1, rule.toString().length() - 1).split(", ")[1]))
          .isEqualTo(KeyRule.header("X-Shop"));
    }

    @Test
    void badSpecsAreConfigErrors() {
      assertThatThrownBy(() -> KeyRule.parse(" "))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("dedup.key is blank");
      assertThatThrownBy(() -> KeyRule.parse(List.of()))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("dedup.key is an empty list");
      assertThatThrownBy(() -> KeyRule.parse("header(\"X-Id\""))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("write header(\"Name\")");
      assertThatThrownBy(() -> KeyRule.parse("header(\"\")"))
          .isInstanceOf(IdemConfigException.class);
      assertThatThrownBy(() -> KeyRule.parse("a..b"))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("at character 3");
      assertThatThrownBy(() -> KeyRule.fields(List.of("a", "b[")))
          .isInstanceOf(IdemConfigException.class);
    }
  }

  @Nested
  class KindsNeverCollide {
    @Test
    void theSameValueFromDifferentSourcesGivesDifferentKeys() {
      InboundEvent e = event(utf8("{\"id\":\"x\"}"), "X-Id", "x");
      DedupKey header = KeyRule.header("X-Id").derive(e);
      DedupKey field = KeyRule.field("id").derive(e);
      DedupKey function = KeyRule.of(ev -> "x").derive(e);
      assertThat(List.of(header, field, function)).doesNotHaveDuplicates();
      assertThat(function).isEqualTo(KeyEncoding.ofString("x"));
    }
  }

  @Nested
  class Function {
    @Test
    void keysOnTheReturnedText() {
      KeyRule rule = KeyRule.of(e -> e.header("X-Order"));
      assertThat(rule.derive(event(null, "x-order", "o-7"))).isEqualTo(KeyEncoding.ofString("o-7"));
    }

    @Test
    void nullOrBlankIsAnError() {
      assertThatThrownBy(() -> KeyRule.of(e -> null).derive(event(BODY)))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("the key function returned null");
      assertThatThrownBy(() -> KeyRule.of(e -> "  ").derive(event(BODY)))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageStartingWith("blank key");
    }
  }

  @Nested
  class DefaultKey {
    private final KeyRule rule = KeyRule.defaultKey();

    @Test
    void memberOrderWhitespaceAndNumberSpellingDoNotMatter() {
      DedupKey key = rule.derive(event(BODY));
      byte[] respelled =
          utf8(
              "{ \"amount\": 1.99e1, \"order\": {\"shop\": \"s1\", \"id\": 1001.0}, \"id\": \"evt_\\u0031\" }");
      assertThat(rule.derive(event(respelled))).isEqualTo(key);
      assertThat(rule.derive(event(utf8("{\"id\":\"evt_2\"}")))).isNotEqualTo(key);
    }

    @Test
    void headersAreNotPartOfIt() {
      assertThat(rule.derive(event(BODY, "X-Request-Id", "1")))
          .isEqualTo(rule.derive(event(BODY, "X-Request-Id", "2")));
    }

    @Test
    void thePrincipalChainIsPartOfIt() {
      DedupKey anonymous = rule.derive(event(BODY));
      DedupKey alice =
          rule.derive(InboundEvent.builder().body(BODY).principal("iss", "alice").build());
      DedupKey bob = rule.derive(InboundEvent.builder().body(BODY).principal("iss", "bob").build());
      DedupKey aliceOtherIssuer =
          rule.derive(InboundEvent.builder().body(BODY).principal("iss2", "alice").build());
      DedupKey aliceViaA =
          rule.derive(
              InboundEvent.builder()
                  .body(BODY)
                  .principal("iss", "alice")
                  .actor("iss", "a")
                  .build());
      DedupKey aliceViaB =
          rule.derive(
              InboundEvent.builder()
                  .body(BODY)
                  .principal("iss", "alice")
                  .actor("iss", "b")
                  .build());
      DedupKey aliceViaAthenB =
          rule.derive(
              InboundEvent.builder()
                  .body(BODY)
                  .principal("iss", "alice")
                  .actor("iss", "a")
                  .actor("iss", "b")
                  .build());
      DedupKey aliceViaBthenA =
          rule.derive(
              InboundEvent.builder()
                  .body(BODY)
                  .principal("iss", "alice")
                  .actor("iss", "b")
                  .actor("iss", "a")
                  .build());
      assertThat(
              List.of(
                  anonymous,
                  alice,
                  bob,
                  aliceOtherIssuer,
                  aliceViaA,
                  aliceViaB,
                  aliceViaAthenB,
                  aliceViaBthenA))
          .doesNotHaveDuplicates();
      assertThat(rule.derive(InboundEvent.builder().body(BODY).principal("iss", "alice").build()))
          .isEqualTo(alice);
      assertThat(alice)
          .isEqualTo(
              KeyEncoding.of(
                  KeyPart.principalChain(List.of(new Principal("iss", "alice"))),
                  KeyPart.digest(CanonicalJson.sha256(BODY))));
    }

    @Test
    void aFailedDerivationLeavesNoTraceInTheNext() {
      DedupKey before = rule.derive(event(BODY));
      InboundEvent bad =
          InboundEvent.builder()
              .body(BODY)
              .principal("iss", "alice")
              .actor("iss", "\uD800")
              .build();
      assertThatThrownBy(() -> rule.derive(bad))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("lone surrogate");
      assertThatThrownBy(() -> rule.derive(event(utf8("{\"a\":[1,"))))
          .isInstanceOf(KeyDerivationException.class);
      assertThat(rule.derive(event(BODY))).isEqualTo(before);
    }

    @Test
    void aJsonNullBodyIsKeyable() {
      assertThat(rule.derive(event(utf8(" null ")))).isEqualTo(rule.derive(event(utf8("null"))));
    }

    @Test
    void aBodyThatIsNotJsonSaysToGiveAKey() {
      assertThatThrownBy(() -> rule.derive(event(null)))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessage("the body is not JSON (the event has no body); " + GIVE_A_KEY);
      assertThatThrownBy(() -> rule.derive(event(new byte[0])))
          .hasMessage("the body is not JSON (the event has an empty body); " + GIVE_A_KEY);
      assertThatThrownBy(() -> rule.derive(event(utf8("<xml/>"))))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessage(
              "the body is not JSON (unexpected '<' where a value was expected at byte 0); "
                  + GIVE_A_KEY)
          .hasCauseInstanceOf(InvalidJsonException.class);
      assertThatThrownBy(() -> rule.derive(event(utf8("{\"a\":1,\"a\":1}"))))
          .hasMessageStartingWith("the body is not JSON (duplicate member name \"a\"")
          .hasMessageEndingWith(GIVE_A_KEY);
    }
  }

  @Nested
  class Events {
    @Test
    void ofCopiesHeadersAndRejectsCaseDuplicates() {
      InboundEvent e = InboundEvent.of(BODY, Map.of("Content-Type", "application/json"));
      assertThat(e.header("content-type")).isEqualTo("application/json");
      assertThat(e.header("X-Missing")).isNull();
      assertThat(e.principalChain()).isEmpty();
      assertThat(e.body()).isSameAs(BODY);
      assertThatThrownBy(() -> InboundEvent.of(BODY, Map.of("X-Id", "1", "x-id", "2")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("differ only in case");
    }

    @Test
    void principalChainsKeepTheirOrder() {
      InboundEvent e =
          InboundEvent.builder().principal("i", "p").actor("i", "a1").actor("j", "a2").build();
      assertThat(e.principalChain())
          .containsExactly(
              new Principal("i", "p"), new Principal("i", "a1"), new Principal("j", "a2"));
      assertThatThrownBy(() -> InboundEvent.builder().actor("i", "a"))
          .isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> new Principal("i", ""))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("empty principal chain");
    }
  }
}
