package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class FieldPathTest {
  private static final byte[] ORDER =
      utf8(
          """
          {
            "id": "ord_1",
            "source": {"id": 42},
            "order": {
              "total": 19.90,
              "paid": true,
              "note": "  ",
              "coupon": null,
              "items": [
                {"sku": "A-1", "qty": 2, "tags": ["x", "y"]},
                {"sku": "B-2", "qty": 1e0, "attrs": {"z": 1, "a": [1.0]}}
              ],
              "a.b": "dotted",
              "": "empty name",
              "café": "unicode",
              "say \\"hi\\"": "quoted"
            }
          }""");

  @Nested
  class Parsing {
    @Test
    void sourceAndBodyPrefixesMeanTheBody() {
      assertThat(FieldPath.parse("source.order.id"))
          .isEqualTo(FieldPath.parse("body.order.id"))
          .isEqualTo(FieldPath.parse("order.id"))
          .hasToString("order.id");
      assertThat(FieldPath.parse("source[0]")).hasToString("[0]");
      assertThat(FieldPath.parse("sourcex.id")).hasToString("sourcex.id");
      assertThat(FieldPath.parse("bodyguard")).hasToString("bodyguard");
    }

    @Test
    void aMemberNamedSourceNeedsThePrefixOrQuotes() {
      assertThat(FieldPath.parse("source.source.id"))
          .isEqualTo(FieldPath.parse("[\"source\"].id"))
          .hasToString("[\"source\"].id");
      assertThat(FieldPath.parse("[\"source\"].id").extract(ORDER)).isEqualTo("42");
      assertThat(FieldPath.parse("source.id").extract(ORDER)).isEqualTo("ord_1");
    }

    @Test
    void toStringReadsBackToTheSamePath() {
      for (String path :
          List.of(
              "a",
              "a.b[0].c",
              "[3][0]",
              "[\"a.b\"].c",
              "a[\"\"]",
              "[\"say \\\"hi\\\"\"]",
              "[\"back\\\\slash\"]",
              "café.ñ",
              "[\"body\"]",
              "x[2147483647]")) {
        FieldPath parsed = FieldPath.parse(path);
        assertThat(parsed.toString()).isEqualTo(path);
        assertThat(FieldPath.parse(parsed.toString())).isEqualTo(parsed);
      }
      assertThat(FieldPath.parse("[\"plain\"]")).hasToString("plain");
    }

    @Test
    void badPathsSayWhereAndWhatIsAllowed() {
      assertBad("", 1, "the path is empty");
      assertBad("a..b", 3, "expected a field name");
      assertBad("a.", 3, "expected a field name");
      assertBad(".a", 1, "expected a field name");
      assertBad("a[", 3, "expected an array index");
      assertBad("a[x]", 3, "expected an array index");
      assertBad("a[1", 4, "expected ']'");
      assertBad("a[01]", 3, "no leading zeros");
      assertBad("a[2147483648]", 3, "at most 2147483647");
      assertBad("a[-1]", 3, "expected an array index");
      assertBad("a]b", 2, "expected '.' or '['");
      assertBad("a b", 2, "expected '.' or '['");
      assertBad("[\"a", 1, "unterminated quoted name");
      assertBad("[\"a\\n\"]", 4, "only the escapes");
      assertBad("a[0]b", 5, "expected '.' or '['");
      assertBad("a.\uD800", 3, "lone surrogate");
      assertThatThrownBy(() -> FieldPath.parse("a..b"))
          .hasMessageContaining("e.g. source.order.items[0].id");
    }

    @Test
    void theWholeBodyIsNotAField() {
      for (String path : List.of("source", "body")) {
        assertThatThrownBy(() -> FieldPath.parse(path))
            .isInstanceOf(IdemConfigException.class)
            .hasMessageContaining("is the whole body")
            .hasMessageContaining("omit dedup.key");
      }
    }

    private void assertBad(String path, int character, String problem) {
      assertThatThrownBy(() -> FieldPath.parse(path))
          .as(path)
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("field path '" + path + "' is not valid at character " + character)
          .hasMessageContaining(problem);
    }
  }

  @Nested
  class Extraction {
    @Test
    void scalarsComeBackAsText() {
      assertThat(extract("id")).isEqualTo("ord_1");
      assertThat(extract("order.total")).isEqualTo("19.9");
      assertThat(extract("order.paid")).isEqualTo("true");
      assertThat(extract("order.items[0].sku")).isEqualTo("A-1");
      assertThat(extract("order.items[1].qty")).isEqualTo("1");
      assertThat(extract("order.items[0].tags[1]")).isEqualTo("y");
    }

    @Test
    void extractJsonKeepsTheJsonType() {
      assertThat(json("id")).isEqualTo("\"ord_1\"");
      assertThat(json("order.total")).isEqualTo("19.9");
      assertThat(json("order.paid")).isEqualTo("true");
      assertThat(json("order.items[1].qty")).isEqualTo("1");
      assertThat(json("order.items[1].attrs")).isEqualTo("{\"a\":[1],\"z\":1}");
      FieldPath n = FieldPath.parse("n");
      assertThat(n.extractJson(utf8("{\"n\":820982911946154508.000}")))
          .isEqualTo(utf8("820982911946154508"));
      assertThat(n.extractJson(utf8("{\"n\":\"a\\u0000\"}"))).isEqualTo(utf8("\"a\\u0000\""));
      assertThatThrownBy(() -> n.extractJson(utf8("{\"n\":\" \\t\"}")))
          .hasMessageContaining("blank key");
      assertThatThrownBy(() -> n.extractJson(utf8("{\"n\":null}"))).hasMessageContaining("null");
    }

    @Test
    void objectsAndArraysComeBackAsCanonicalJson() {
      assertThat(extract("order.items[1].attrs")).isEqualTo("{\"a\":[1],\"z\":1}");
      assertThat(extract("order.items[0].tags")).isEqualTo("[\"x\",\"y\"]");
      assertThat(FieldPath.parse("[1]").extract(utf8("[0, {\"b\":1, \"a\":2}]")))
          .isEqualTo("{\"a\":2,\"b\":1}");
    }

    @Test
    void quotedAndUnicodeNames() {
      assertThat(extract("order[\"a.b\"]")).isEqualTo("dotted");
      assertThat(extract("order[\"\"]")).isEqualTo("empty name");
      assertThat(extract("order.café")).isEqualTo("unicode");
      assertThat(extract("order[\"say \\\"hi\\\"\"]")).isEqualTo("quoted");
      assertThat(FieldPath.parse("[\"\\\\\"]").extract(utf8("{\"\\u005c\":\"\\u00e9\\n\"}")))
          .isEqualTo("é\n");
    }

    @Test
    void missingFieldsNameThePathAndWhereItStops() {
      assertMissing("nope", "no field nope in the body (the body has no member \"nope\")");
      assertMissing(
          "order.nope.x", "no field order.nope.x in the body (order has no member \"nope\")");
      assertMissing("id.x", "no field id.x in the body (id is a string, not an object)");
      assertMissing(
          "order.items[2].sku",
          "no field order.items[2].sku in the body (order.items has 2 elements)");
      assertMissing("order.items.sku", "(order.items is an array, not an object)");
      assertMissing("order[0]", "(order is an object, not an array)");
      assertMissing("order.coupon.code", "(order.coupon is null, not an object)");
      assertMissing("[0]", "(the body is an object, not an array)");
      assertThatThrownBy(() -> FieldPath.parse("a").extract(utf8("[]")))
          .hasMessageContaining("send it or change dedup.key");
    }

    @Test
    void nullIsNotAKey() {
      assertThatThrownBy(() -> extract("order.coupon"))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("field order.coupon is null");
    }

    @Test
    void blankIsNotAKey() {
      assertThatThrownBy(() -> extract("order.note"))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("blank key: field order.note is blank");
      assertThatThrownBy(() -> FieldPath.parse("a").extract(utf8("{\"a\":\"\"}")))
          .hasMessageContaining("blank key");
    }

    @Test
    void theWholeBodyIsValidated() {
      // The field is found before the problem, and the body is still rejected.
      assertThatThrownBy(
              () -> FieldPath.parse("a").extract(utf8("{\"a\":\"x\",\"b\":{\"c\":1,\"c\":2}}")))
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name \"c\"");
      assertThatThrownBy(() -> FieldPath.parse("a").extract(utf8("{\"a\":\"x\"} trailing")))
          .isInstanceOf(InvalidJsonException.class);
      assertThatThrownBy(() -> FieldPath.parse("a").extract(utf8("{\"a\":\"x\",\"a\":\"y\"}")))
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name \"a\"");
    }

    @Test
    void skipsSubtreesWithStringsThatLookLikeStructure() {
      byte[] json =
          utf8("{\"a\":{\"x\":\"}]\\\"{[,\",\"y\":[\"]\",{\"z\":\"}\"}]},\"b\":\"found\"}");
      assertThat(FieldPath.parse("b").extract(json)).isEqualTo("found");
      assertThat(FieldPath.parse("a.y[1].z").extract(json)).isEqualTo("}");
    }

    private void assertMissing(String path, String message) {
      assertThatThrownBy(() -> extract(path))
          .as(path)
          .isInstanceOf(KeyDerivationException.class)
          .isNotInstanceOf(InvalidJsonException.class)
          .hasMessageContaining(message);
    }

    private String extract(String path) {
      return FieldPath.parse(path).extract(ORDER);
    }

    private String json(String path) {
      return new String(FieldPath.parse(path).extractJson(ORDER), StandardCharsets.UTF_8);
    }
  }
}
