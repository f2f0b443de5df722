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
        assertThat(canonical(text)).as(text).isEqualTo(want);
      }
    }
    assertThatThrownBy(() -> canonical("[1e309]")).isInstanceOf(NumberOutOfRangeException.class);
    assertThatThrownBy(() -> canonical("[1E-325]")).isInstanceOf(NumberOutOfRangeException.class);
  }
}
