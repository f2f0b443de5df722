package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The canonicalizer's short cuts give what its definition gives: numbers in scientific notation
 * ({@code D[.ddd]e±x}, written without the general digit search), member names read with one load
 * (up to seven bytes, eight, longer, near the input's end), and the packed-prefix member sort (ties
 * on eight shared bytes, objects wider than 256 members, duplicates). Expected forms come from
 * {@link ExactNumberOracle} and a {@link TreeMap} of names, nothing from the code under test.
 */
class CanonicalizerFastPathsTest {
  private static String canonical(String json) {
    return new String(CanonicalJson.canonicalize(utf8(json)), StandardCharsets.UTF_8);
  }

  /** Mantissas of one digit and of fractions up to 40 digits, with and without trailing zeros. */
  private static List<String> mantissas() {
    List<String> out = new ArrayList<>(List.of("1", "7", "9", "1.0", "2.5", "9.000", "1.00000000"));
    String digits = "1234567890123456789012345678901234567891";
    for (int n = 1; n <= 40; n++) {
      out.add("3." + digits.substring(0, n)); // fraction runs across the 8-byte boundaries
      out.add("6." + digits.substring(0, n - 1) + "0");
      out.add("8." + "0".repeat(n) + "5");
    }
    return out;
  }

  private static List<Integer> exponents() {
    List<Integer> out = new ArrayList<>();
    for (int e = -330; e <= -315; e++) {
      out.add(e);
    }
    for (int e = -30; e <= 30; e++) {
      out.add(e);
    }
    for (int e = 295; e <= 312; e++) {
      out.add(e);
    }
    out.add(400);
    out.add(-400);
    return out;
  }

  @Test
  void scientificNotationIsTheExactValueInEcmaLayout() {
    String[] spellings = {"e%d", "E%d", "e+%d", "e%03d"};
    int checked = 0;
    for (String m : mantissas()) {
      for (int e : exponents()) {
        for (String sign : new String[] {"", "-"}) {
          String exp =
              String.format(spellings[(checked++) % spellings.length], e).replace("e+-", "e-");
          if (e < 0) {
            exp = exp.replace("+", "");
          }
          String text = sign + m + exp;
          BigDecimal value = new BigDecimal(text);
          if (ExactNumberOracle.inRange(value)) {
            assertThat(canonical("{\"a\":" + text + "}"))
                .as(text)
                .isEqualTo("{\"a\":" + ExactNumberOracle.canonical(value) + "}");
          } else {
            assertThatThrownBy(() -> canonical("[" + text + "]"))
                .as(text)
                .isInstanceOf(NumberOutOfRangeException.class);
          }
        }
      }
    }
    assertThat(checked).isGreaterThan(10_000);
  }

  @Test
  void zeroAndOtherMantissasTakeTheGeneralPathToTheSameForms() {
    assertThat(canonical("[-0e5,0e400,-0.0E-3,0.00e-400,-0]")).isEqualTo("[0,0,0,0,0]");
    assertThat(canonical("[12.5e1,0.125e3,-0.0000125E7,125000000000000000000000e-3]"))
        .isEqualTo("[125,125,-125,125000000000000000000]");
    assertThat(canonical("[1e20,1e21,1.5e-6,1.5e-7,1e-6,1e-7]"))
        .isEqualTo("[100000000000000000000,1e+21,0.0000015,1.5e-7,0.000001,1e-7]");
    // A 64-bit id written with an exponent keeps every digit.
    assertThat(canonical("[8.20982911946154508e17,1.8446744073709551615E+19]"))
        .isEqualTo("[820982911946154508,18446744073709551615]");
  }

  @Test
  void namesOfEveryLengthNearTheWordAndInputEdgesSortAsStrings() {
    SplittableRandom random = new SplittableRandom(12);
    for (int round = 0; round < 400; round++) {
      Map<String, String> expected = new TreeMap<>();
      StringBuilder json = new StringBuilder("{");
      int members = 1 + random.nextInt(12);
      while (expected.size() < members) {
        StringBuilder name = new StringBuilder();
        int length = random.nextInt(18); // 0-7 one load, 8 exactly a word, longer
        for (int i = 0; i < length; i++) {
          // a few letters, so that names share their first eight bytes; a space and '~' too
          name.append(" ab~yz".charAt(random.nextInt(6)));
        }
        if (expected.containsKey(name.toString())) {
          continue;
        }
        String value = random.nextBoolean() ? "1.50e1" : "-7";
        expected.put(name.toString(), value.equals("-7") ? "-7" : "15");
        if (json.length() > 1) {
          json.append(',');
        }
        json.append('"').append(name).append("\":").append(value);
      }
      json.append('}');
      StringBuilder want = new StringBuilder("{");
      expected.forEach(
          (k, v) ->
              want.append(want.length() > 1 ? "," : "")
                  .append('"')
                  .append(k)
                  .append("\":")
                  .append(v));
      assertThat(canonical(json.toString())).as(json.toString()).isEqualTo(want + "}");
    }
  }

  @Test
  void wideObjectsWithSharedPrefixesSortAndFindDuplicates() {
    for (int members : new int[] {31, 33, 64, 65, 255, 256, 257, 600}) {
      List<String> names = new ArrayList<>();
      for (int i = 0; i < members; i++) {
        // Half share their first eight bytes: those tie on the packed prefix.
        names.add(i % 2 == 0 ? "shipping_" + i : "n" + i);
      }
      Collections.shuffle(names, new java.util.Random(members));
      StringBuilder json = new StringBuilder("{");
      for (String name : names) {
        json.append(json.length() > 1 ? "," : "").append('"').append(name).append("\":1e0");
      }
      json.append('}');
      Collections.sort(names);
      StringBuilder want = new StringBuilder("{");
      for (String name : names) {
        want.append(want.length() > 1 ? "," : "").append('"').append(name).append("\":1");
      }
      assertThat(canonical(json.toString())).isEqualTo(want + "}");

      String duplicated =
          json.substring(0, json.length() - 1) + ",\"" + names.get(members / 2) + "\":2}";
      assertThatThrownBy(() -> canonical(duplicated))
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name \"" + names.get(members / 2) + "\"");
    }
  }

  /**
   * Wide objects whose members come partly in order (ascending runs of every length, from 1 to the
   * whole object, a quarter sharing eight-byte prefixes), as generated payloads often are: the wide
   * sort's halves then often come out in order already (its early return) and ties span the runs.
   * Each gives the sorted form, and a duplicate of a member of any run is found.
   */
  @Test
  void wideObjectsMadeOfOrderedRunsSortAndFindDuplicates() {
    SplittableRandom random = new SplittableRandom(12);
    for (int round = 0; round < 300; round++) {
      int members = 33 + random.nextInt(300);
      List<String> names = new ArrayList<>();
      for (int i = 0; i < members; i++) {
        names.add(
            (random.nextInt(4) == 0 ? "shipping_" : "")
                + Integer.toString(random.nextInt(1 << 20), 36)
                + "_"
                + i);
      }
      // Sorted runs of a random length each, in a shuffled order of runs
      List<String> sorted = new ArrayList<>(names);
      Collections.sort(sorted);
      List<List<String>> runs = new ArrayList<>();
      int maxRun = 1 + random.nextInt(members);
      for (int at = 0; at < members; ) {
        int length = Math.min(members - at, 1 + random.nextInt(maxRun));
        runs.add(new ArrayList<>(sorted.subList(at, at + length)));
        at += length;
      }
      Collections.shuffle(runs, new java.util.Random(round));
      StringBuilder json = new StringBuilder("{");
      for (List<String> run : runs) {
        for (String name : run) {
          json.append(json.length() > 1 ? "," : "").append('"').append(name).append("\":1.0");
        }
      }
      json.append('}');
      StringBuilder want = new StringBuilder("{");
      for (String name : sorted) {
        want.append(want.length() > 1 ? "," : "").append('"').append(name).append("\":1");
      }
      assertThat(canonical(json.toString())).as(json.toString()).isEqualTo(want + "}");

      String again = sorted.get(random.nextInt(members));
      String duplicated = json.substring(0, json.length() - 1) + ",\"" + again + "\":2}";
      assertThatThrownBy(() -> canonical(duplicated))
          .as(duplicated)
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name \"" + again + "\"");
    }
  }

  /**
   * Numbers already in ECMAScript's exponent form ({@code D[.ddd]e±x}, as JavaScript writes them)
   * stay as they are; every near miss (a trailing fraction zero, {@code E}, no sign, a leading
   * exponent zero, an exponent plain notation covers, two integer digits, a leading zero, the edges
   * of the range) is still rewritten or refused. Expected forms from {@link ExactNumberOracle}.
   */
  @Test
  void numbersAlreadyInExponentFormStayAndTheirNearMissesAreRewritten() {
    List<String> texts = new ArrayList<>();
    String digits = "12345678901234567";
    for (int e :
        new int[] {-330, -325, -324, -323, -100, -8, -7, -6, -1, 0, 1, 20, 21, 22, 99, 308, 309}) {
      for (String mantissa :
          List.of("1", "9", "1.5", "7." + digits, "2.50", "3.0", "10", "0.5", "0", "12.5")) {
        for (String mark : List.of("e", "E")) {
          String sign = e < 0 ? "-" : "+";
          int magnitude = Math.abs(e);
          texts.add(mantissa + mark + sign + magnitude); // the canonical spelling, if in range
          texts.add(mantissa + mark + (e < 0 ? "-" : "") + magnitude); // no '+'
          texts.add(mantissa + mark + sign + "0" + magnitude); // a leading exponent zero
          texts.add("-" + mantissa + mark + sign + magnitude);
        }
      }
    }
    for (String text : texts) {
      BigDecimal value = new BigDecimal(text);
      String json = "{\"b\":" + text + ",\"a\":[" + text + "]}";
      if (ExactNumberOracle.inRange(value)) {
        String want = ExactNumberOracle.canonical(value);
        assertThat(canonical(json)).as(text).isEqualTo("{\"a\":[" + want + "],\"b\":" + want + "}");
      } else {
        assertThatThrownBy(() -> canonical(json))
            .as(text)
            .isInstanceOf(NumberOutOfRangeException.class);
      }
    }
    assertThat(canonical("[1e+21,6.02214076e+23,-1.5e-7,1e-324,9.99e+308]"))
        .isEqualTo("[1e+21,6.02214076e+23,-1.5e-7,1e-324,9.99e+308]");
    assertThat(canonical("[1e+20,1e-6,1.50e+21,1E+21,1e21,1e+021]"))
        .isEqualTo("[100000000000000000000,0.000001,1.5e+21,1e+21,1e+21,1e+21]");
  }

  /**
   * Names that share their first seven bytes tie in the prefix sort (the member's index takes the
   * prefix's eighth byte) and are ordered by their whole names, in objects of every width around
   * the insertion and merge sorts' limits and past 256 members (where the index takes more bits); a
   * duplicate among them is found.
   */
  @Test
  void namesSharingSevenBytesSortByTheirWholeNamesAndFindDuplicates() {
    for (int members : new int[] {4, 5, 17, 32, 33, 200, 256, 257, 700}) {
      SplittableRandom random = new SplittableRandom(members);
      List<String> names = new ArrayList<>();
      while (names.size() < members) {
        // "abcdefg" then one byte that differs (or none), then maybe more: the eighth byte, the
        // index's byte, decides; or, past 256 members, bytes taken by the index decide
        String name =
            "abcdefg".substring(0, 5 + random.nextInt(3))
                + "~ zaA09".charAt(random.nextInt(7))
                + (random.nextBoolean() ? "" : Integer.toString(random.nextInt(1000), 36));
        if (!names.contains(name)) {
          names.add(name);
        }
      }
      List<String> sorted = new ArrayList<>(names);
      Collections.sort(sorted);
      StringBuilder json = new StringBuilder("{");
      for (String name : names) {
        json.append(json.length() > 1 ? "," : "").append('"').append(name).append("\":7");
      }
      json.append('}');
      StringBuilder want = new StringBuilder("{");
      for (String name : sorted) {
        want.append(want.length() > 1 ? "," : "").append('"').append(name).append("\":7");
      }
      assertThat(canonical(json.toString())).as(json.toString()).isEqualTo(want + "}");

      String again = names.get(random.nextInt(members));
      String duplicated = json.substring(0, json.length() - 1) + ",\"" + again + "\":2}";
      assertThatThrownBy(() -> canonical(duplicated))
          .as(duplicated)
          .isInstanceOf(InvalidJsonException.class)
          .hasMessageContaining("duplicate member name \"" + again + "\"");
    }
  }

  @Test
  void namesWithEscapesOrNonAsciiStillSortByCodeUnits() {
    assertThat(canonical("{\"b\":1,\"\\u0061\":2,\"é\":3,\"aaaaaaaa\\n\":4,\"aaaaaaaa\":5}"))
        .isEqualTo("{\"a\":2,\"aaaaaaaa\":5,\"aaaaaaaa\\n\":4,\"b\":1,\"é\":3}");
  }

  /**
   * Compact bodies keep whole objects in the canonicalizer's pending run of input (no whitespace,
   * no string or number rewritten), which it then sorts straight from the input; escapes that are
   * canonical as written ({@code \"}, {@code \n}, ...) stay in the run too. The input sits at an
   * offset inside a larger array, either with bytes after it or ending exactly at the array's end
   * (where the eight-byte moves must not read past the array).
   */
  @Test
  void compactBodiesSortFromTheInputAtAnyOffset() {
    long seed = new SplittableRandom().nextLong();
    SplittableRandom random = new SplittableRandom(seed);
    JsonCanonicalizer c = JsonCanonicalizer.get();
    for (int i = 0; i < 13_000; i++) {
      // Given a random value, spelled compactly with its members shuffled
      Object value = JsonModel.randomValue(random, 0);
      String spelled = JsonModel.compact(value, random);
      byte[] json = utf8(spelled);
      int off = random.nextInt(40);
      int after = random.nextBoolean() ? 0 : random.nextInt(1, 40);
      byte[] padded = new byte[off + json.length + after];
      for (int k = 0; k < padded.length; k++) {
        padded[k] = (byte) "{\"x\\]".charAt(random.nextInt(5)); // bytes that would show up
      }
      System.arraycopy(json, 0, padded, off, json.length);

      // When it is canonicalized where it lies, then it is the reference form
      c.canonicalize(padded, off, json.length);
      assertThat(new String(c.out, 0, c.outLen, StandardCharsets.UTF_8))
          .as("seed %d: %s", seed, spelled)
          .isEqualTo(JsonModel.canonical(value));
    }
    c.trim();
  }
}
