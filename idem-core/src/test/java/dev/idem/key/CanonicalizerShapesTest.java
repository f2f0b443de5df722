package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The canonicalizer's memory of member orders (an object whose names come as those of an object
 * sorted before, a sender's schema, reuses that order) and its rewrites that keep part of a number
 * or of an object in place (an exponent rewritten behind its mantissa, an object permuted into the
 * spare buffer). Every object is checked against a {@link TreeMap} of its names and every number
 * against {@link ExactNumberOracle}, nothing from the code under test. One thread, so that the
 * objects of a test share the canonicalizer and what it remembers.
 */
class CanonicalizerShapesTest {
  private static String canonical(String json) {
    return new String(CanonicalJson.canonicalize(utf8(json)), StandardCharsets.UTF_8);
  }

  /** The JSON text of a string of plain ASCII, as it is also its canonical form. */
  private static String quoted(String name) {
    return '"' + name + '"';
  }

  /** A member list in the given order, with the given value spellings. */
  private static String object(List<String> names, List<String> values) {
    StringBuilder json = new StringBuilder("{");
    for (int i = 0; i < names.size(); i++) {
      json.append(i > 0 ? "," : "").append(quoted(names.get(i))).append(':').append(values.get(i));
    }
    return json.append('}').toString();
  }

  /** The canonical form of an object of those names and canonical values. */
  private static String sorted(List<String> names, List<String> canonicalValues) {
    Map<String, String> members = new TreeMap<>();
    for (int i = 0; i < names.size(); i++) {
      members.put(names.get(i), canonicalValues.get(i));
    }
    StringBuilder want = new StringBuilder("{");
    members.forEach(
        (k, v) ->
            want.append(want.length() > 1 ? "," : "").append(quoted(k)).append(':').append(v));
    return want.append('}').toString();
  }

  private static BigDecimal randomNumber(SplittableRandom r) {
    return switch (r.nextInt(5)) {
      case 0 -> BigDecimal.valueOf(r.nextLong());
      case 1 -> BigDecimal.valueOf(r.nextInt(-100_000, 100_000), r.nextInt(-3, 6));
      case 2 ->
          new BigDecimal(r.nextInt(1, 10) + "." + r.nextInt(1000) + "1E" + r.nextInt(-40, 40));
      case 3 -> BigDecimal.valueOf(r.nextInt(1, 10)).scaleByPowerOfTen(r.nextInt(-320, 300));
      default -> BigDecimal.ZERO;
    };
  }

  /** Names that differ in their first seven bytes, share eight, or differ only after eight. */
  private static final String[] NAMES = {
    "a",
    "b",
    "id",
    "n1",
    "n10",
    "n2",
    "zz",
    "total",
    "total_tax",
    "total_price",
    "abcdefgX",
    "abcdefgY",
    "abcdefghA",
    "abcdefghB",
    "shipping_lines",
    "shipping_address",
    "x y",
    "~",
    ""
  };

  /**
   * Objects drawn from a few fixed shapes (the same names in the same order), more shapes than the
   * canonicalizer keeps and in random turns, with fresh number spellings each time: every one is
   * sorted as if seen for the first time. Names that share seven bytes force the comparison of
   * whole names, which an order kept from another object must not skip.
   */
  @Test
  void objectsOfRepeatedShapesSortAsIfSeenFirst() {
    SplittableRandom r = new SplittableRandom(81);
    List<List<String>> shapes = new ArrayList<>();
    for (int s = 0; s < 24; s++) {
      List<String> names = new ArrayList<>();
      int width = 2 + r.nextInt(s < 12 ? 8 : 140); // some beyond the widest order kept (128)
      while (names.size() < width) {
        String name =
            r.nextInt(3) == 0 ? NAMES[r.nextInt(NAMES.length)] : "m" + r.nextInt(10 * width);
        if (!names.contains(name)) {
          names.add(name);
        }
      }
      shapes.add(names);
    }
    for (int round = 0; round < 3000; round++) {
      List<String> names = shapes.get(r.nextInt(shapes.size()));
      List<String> values = new ArrayList<>();
      List<String> canonicalValues = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        BigDecimal d = randomNumber(r);
        if (!ExactNumberOracle.inRange(d)) {
          d = BigDecimal.ONE;
        }
        values.add(JsonModel.spellNumber(d, r));
        canonicalValues.add(ExactNumberOracle.canonical(d));
      }
      String json = object(names, values);
      assertThat(canonical(json)).as(json).isEqualTo(sorted(names, canonicalValues));
    }
  }

  /**
   * Two shapes whose names have the same eight-byte prefixes in the same order, but differ after
   * them: an order depends on the first seven bytes only, so both sort right in turn; where names
   * share seven bytes, each object compares them whole.
   */
  @Test
  void shapesThatAgreeOnPrefixesSortByTheirOwnNames() {
    List<List<String>> shapes =
        List.of(
            List.of("zzzzzzzzA", "mmmmmmmmB", "aaaaaaaaC", "q"),
            List.of("zzzzzzzzC", "mmmmmmmmA", "aaaaaaaaB", "q"),
            List.of("abcdefgY", "abcdefgX", "q", "a"),
            List.of("abcdefgX", "abcdefgY", "q", "a"),
            List.of("abcdefghB", "abcdefghA", "q", "a"),
            List.of("abcdefghA", "abcdefghB", "q", "a"));
    List<String> values = List.of("1.0", "2e0", "3", "40E-1");
    List<String> canonicalValues = List.of("1", "2", "3", "4");
    for (int round = 0; round < 6; round++) {
      for (List<String> names : shapes) {
        String json = object(names, values);
        assertThat(canonical(json)).as(json).isEqualTo(sorted(names, canonicalValues));
      }
    }
  }

  /**
   * Objects whose prefixes are always the same, but whose names sharing eight bytes come in random
   * orders (and are sometimes equal): a kept order is taken only where those names compare in its
   * order, and a duplicate among them is found.
   */
  @Test
  void tiedNamesOfAKeptOrderAreComparedEachTime() {
    SplittableRandom r = new SplittableRandom(3);
    for (int round = 0; round < 2000; round++) {
      String x = "shipping_" + "abc".charAt(r.nextInt(3));
      String y = "shipping_" + "abc".charAt(r.nextInt(3));
      String z = "abcdefgh" + "xyz".repeat(1 + r.nextInt(2)).substring(r.nextInt(3));
      String w = "abcdefgh" + "xy".charAt(r.nextInt(2));
      List<String> names = List.of("id", x, "zeta", y, z, w, "n10", "n2");
      List<String> values = List.of("1", "2.0", "3", "4e0", "5", "6", "7", "8");
      List<String> canonicalValues = List.of("1", "2", "3", "4", "5", "6", "7", "8");
      String json = object(names, values);
      if (x.equals(y) || z.equals(w)) {
        assertThatThrownBy(() -> canonical(json))
            .as(json)
            .isInstanceOf(InvalidJsonException.class)
            .hasMessageContaining("duplicate member name \"" + (x.equals(y) ? x : z) + "\"");
      } else {
        assertThat(canonical(json)).as(json).isEqualTo(sorted(names, canonicalValues));
      }
    }
  }

  /** A duplicate is found in an object shaped like one sorted before but for the duplicate. */
  @Test
  void aDuplicateIsFoundInAShapeSeenBefore() {
    String seen = "{\"b\":1,\"a\":2,\"c\":3,\"n10\":4,\"n2\":5}";
    assertThat(canonical(seen)).isEqualTo("{\"a\":2,\"b\":1,\"c\":3,\"n10\":4,\"n2\":5}");
    assertThat(canonical(seen)).isEqualTo("{\"a\":2,\"b\":1,\"c\":3,\"n10\":4,\"n2\":5}");
    for (String duplicated :
        List.of(
            "{\"b\":1,\"a\":2,\"a\":3,\"n10\":4,\"n2\":5}",
            "{\"b\":1,\"a\":2,\"c\":3,\"n10\":4,\"b\":5}",
            "{\"b\":1,\"a\":2,\"c\":3,\"n2\":4,\"n2\":5}")) {
      assertThatThrownBy(() -> canonical(duplicated))
          .as(duplicated)
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name");
    }
    assertThat(canonical(seen)).isEqualTo("{\"a\":2,\"b\":1,\"c\":3,\"n10\":4,\"n2\":5}");
  }

  /**
   * Objects with rewritten numbers at every depth and behind text of every length: the object is
   * then permuted out of the output, into the spare buffer when the text before it is no longer
   * than it, in place otherwise.
   */
  @Test
  void objectsWithRewritesSortBehindTextOfAnyLength() {
    SplittableRandom r = new SplittableRandom(5);
    for (int round = 0; round < 2000; round++) {
      int before = r.nextInt(3) == 0 ? r.nextInt(200) : r.nextInt(12);
      String pad = "p".repeat(before);
      List<String> names = new ArrayList<>();
      for (int i = 0, n = 2 + r.nextInt(10); i < n; i++) {
        names.add("k" + (n - i) + "x".repeat(r.nextInt(30)));
      }
      List<String> values = new ArrayList<>();
      List<String> canonicalValues = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        BigDecimal d = BigDecimal.valueOf(r.nextInt(-999, 999), r.nextInt(0, 3));
        String trailingZero = d.toPlainString() + (d.scale() > 0 ? "0" : ".0");
        values.add(r.nextBoolean() ? trailingZero : d.toString().replace("E", "e"));
        canonicalValues.add(ExactNumberOracle.canonical(d));
      }
      String inner = object(names, values);
      String innerWant = sorted(names, canonicalValues);
      String json;
      String want;
      switch (r.nextInt(3)) {
        case 0 -> {
          json = "[" + quoted(pad) + "," + inner + "]";
          want = "[" + quoted(pad) + "," + innerWant + "]";
        }
        case 1 -> {
          json = "{\"a\":" + quoted(pad) + ",\"b\":" + inner + ",\"c\":1.50}";
          want = "{\"a\":" + quoted(pad) + ",\"b\":" + innerWant + ",\"c\":1.5}";
        }
        default -> {
          json = "{\"z\":" + inner + ",\"a\":[" + inner + "," + quoted(pad) + "]}";
          want = "{\"a\":[" + innerWant + "," + quoted(pad) + "],\"z\":" + innerWant + "}";
        }
      }
      assertThat(canonical(json)).as(json).isEqualTo(want);
    }
  }

  /**
   * Numbers {@code D[.ddd]e±x} outside plain notation's range, whose mantissa stays as written and
   * whose exponent is rewritten ({@code E}, no sign, leading zeros), at every offset of the input
   * (so across the 8-byte words) and at its very end.
   */
  @Test
  void exponentsAreRewrittenBehindTheirMantissaAtAnyOffset() {
    String[] mantissas = {"1", "7", "-9", "6.02214076", "-1.7976931348623157", "2.5", "1.0000001"};
    String[] exponents = {
      "e21", "E21", "e+21", "E+021", "e0308", "e308", "E-7", "e-07", "e-324", "e-0324", "e22",
      "e99", "e100", "E-100", "e-10"
    };
    for (String m : mantissas) {
      for (String e : exponents) {
        String text = m + e;
        BigDecimal value = new BigDecimal(text);
        String want = ExactNumberOracle.canonical(value);
        assertAtEveryOffset(text, want);
        assertThat(canonical(text)).as(text).isEqualTo(want);
      }
    }
    assertThatThrownBy(() -> canonical("[1e309]")).isInstanceOf(NumberOutOfRangeException.class);
    assertThatThrownBy(() -> canonical("[1E-325]")).isInstanceOf(NumberOutOfRangeException.class);
  }

  /**
   * Numbers without exponent that are not canonical as written or start with 0 (cut trailing
   * fraction zeros, zeros of every sign, {@code 0.0000001} and beyond, 21 and 22 integer digits),
   * at every offset of the input and at its very end.
   */
  @Test
  void decimalsAreCutOrRewrittenAtAnyOffset() {
    String[] texts = {
      "-12.50",
      "0.10",
      "7.000",
      "7.0",
      "0.000012300",
      "-0",
      "0",
      "-0.0",
      "0.000",
      "0.0000001",
      "0.00000010",
      "0.000001",
      "-0.0000010",
      "0.5",
      "-98765.4321000",
      "100.00",
      "123456789012345678901.50",
      "123456789012345678901",
      "1234567890123456789012",
      "1234567890123456789012.0",
      "-1234567890123456789012.500"
    };
    for (String text : texts) {
      String want = ExactNumberOracle.canonical(new BigDecimal(text));
      assertAtEveryOffset(text, want);
      assertThat(canonical(text)).as(text).isEqualTo(want);
      assertThat(canonical(" " + text + " ")).as(text).isEqualTo(want);
    }
    for (String invalid : new String[] {"[-]", "[1.]", "[01]", "[-01.5]", "[1.5.]", "[.5]"}) {
      assertThatThrownBy(() -> canonical(invalid))
          .as(invalid)
          .isInstanceOf(InvalidJsonException.class);
    }
  }

  /**
   * The number canonicalizes to {@code want} behind 0-9 bytes of text, in an array and an object.
   */
  private static void assertAtEveryOffset(String text, String want) {
    for (int offset = 0; offset < 10; offset++) {
      String pad = "x".repeat(offset);
      assertThat(canonical("[" + quoted(pad) + "," + text + "]"))
          .as(text)
          .isEqualTo("[" + quoted(pad) + "," + want + "]");
      assertThat(canonical("{\"" + pad + "\":" + text + ",\"a\":" + text + "}"))
          .as(text)
          .isEqualTo(
              offset == 0
                  ? "{\"\":" + want + ",\"a\":" + want + "}"
                  : "{\"a\":" + want + ",\"" + pad + "\":" + want + "}");
    }
  }
}
