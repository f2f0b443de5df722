package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.Fingerprint;
import dev.idem.internal.Sha256Words;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class CanonicalJsonTest {

  /** The examples of RFC 8785 and its reference test data (cyberphone/json-canonicalization). */
  @Nested
  class Rfc8785Examples {
    @Test
    void section3_2_2Sample() {
      String input =
          """
          {
            "numbers": [333333333.33333329, 1E30, 4.50,
                        2e-3, 0.000000000000000000000000001],
            "string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/",
            "literals": [null, true, false]
          }
          """;
      // RFC 8785 rounds 333333333.33333329 to the nearest double, 333333333.3333333; keys keep
      // the exact value (the one departure from the RFC's expected output here).
      String expected =
          """
          {"literals":[null,true,false],"numbers":[333333333.33333329,1e+30,4.5,0.002,1e-27],\
          "string":"€$\\u000f\\nA'B\\"\\\\\\\\\\"/"}""";
      assertCanonical(input, expected);
      // Section 3.2.4 gives the result as UTF-8 bytes; its first two lines:
      byte[] bytes = CanonicalJson.canonicalize(utf8(input));
      assertThat(HexFormat.of().formatHex(bytes, 0, 40))
          .isEqualTo(
              ("7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72"
                      + "75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a")
                  .replace(" ", ""));
    }

    @Test
    void section3_2_3SortingSample() {
      assertCanonical(
          """
          {
            "\\u20ac": "Euro Sign",
            "\\r": "Carriage Return",
            "\\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\\ud83d\\ude00": "Emoji: Grinning Face",
            "\\u0080": "Control",
            "\\u00f6": "Latin Small Letter O With Diaeresis"
          }""",
          "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small"
              + " Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"\uD83D\uDE00\":\"Emoji: Grinning"
              + " Face\",\"\uFB33\":\"Hebrew Letter Dalet With Dagesh\"}");
    }

    @Test
    void structures() {
      assertCanonical(
          """
          {
            "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0},
            "10": { },
            "": "empty",
            "a": { },
            "111": [ { } ],
            "A": { }
          }""",
          """
          {"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}""");
    }

    @Test
    void arrays() {
      assertCanonical(
          """
          [
            56,
            {
              "d": true,
              "10": null,
              "1": [ ]
            }
          ]""",
          """
          [56,{"1":[],"10":null,"d":true}]""");
    }

    @Test
    void unicodeIsNotNormalised() {
      assertCanonical(
          """
          {
            "Unnormalized Unicode":"\\u1e0d\\u0307"
          }""",
          "{\"Unnormalized Unicode\":\"\u1e0d\u0307\"}");
    }

    @Test
    void weirdNamesSortByUtf16CodeUnits() {
      assertCanonical(
          """
          {
            "\\u20ac": "Euro Sign",
            "\\r": "Carriage Return",
            "\\u000a": "Newline",
            "1": "One",
            "\\u0080": "Control\\u007f",
            "\\ud83d\\ude02": "Smiley",
            "\\u00f6": "Latin Small Letter O With Diaeresis",
            "\\ufb33": "Hebrew Letter Dalet With Dagesh",
            "</script>": "Browser Challenge"
          }""",
          "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",\"</script>\":\"Browser"
              + " Challenge\",\"\u0080\":\"Control\u007f\",\"ö\":\"Latin Small Letter O With"
              + " Diaeresis\",\"€\":\"Euro Sign\",\"\uD83D\uDE02\":\"Smiley\",\"\uFB33\":\"Hebrew"
              + " Letter Dalet With Dagesh\"}");
    }

    @Test
    void sortingIgnoresLocale() {
      assertCanonical(
          """
          {
            "peach": "This sorting order",
            "péché": "is wrong according to French",
            "pêche": "but canonicalization MUST",
            "sin":   "ingnore locale"
          }""",
          """
          {"peach":"This sorting order","péché":"is wrong according to French",\
          "pêche":"but canonicalization MUST","sin":"ingnore locale"}""");
    }

    /**
     * RFC 8785 Appendix B: IEEE-754 bit patterns and their RFC 8785 form. Those forms are shortest
     * round-trip digits, and where a number is written with exactly those digits Idem's exact form
     * is the same text; the double's exact expansion keeps all its digits instead.
     */
    @Test
    void appendixBNumbers() {
      String[][] table = {
        {"0000000000000000", "0"},
        {"8000000000000000", "0"},
        {"0000000000000001", "5e-324"},
        {"8000000000000001", "-5e-324"},
        {"7fefffffffffffff", "1.7976931348623157e+308"},
        {"ffefffffffffffff", "-1.7976931348623157e+308"},
        {"4340000000000000", "9007199254740992"},
        {"c340000000000000", "-9007199254740992"},
        {"4430000000000000", "295147905179352830000"},
        {"44b52d02c7e14af5", "9.999999999999997e+22"},
        {"44b52d02c7e14af6", "1e+23"},
        {"44b52d02c7e14af7", "1.0000000000000001e+23"},
        {"444b1ae4d6e2ef4e", "999999999999999700000"},
        {"444b1ae4d6e2ef4f", "999999999999999900000"},
        {"444b1ae4d6e2ef50", "1e+21"},
        {"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
        {"3eb0c6f7a0b5ed8d", "0.000001"},
        {"41b3de4355555553", "333333333.3333332"},
        {"41b3de4355555554", "333333333.33333325"},
        {"41b3de4355555555", "333333333.3333333"},
        {"41b3de4355555556", "333333333.3333334"},
        {"41b3de4355555557", "333333333.33333343"},
        {"becbf647612f3696", "-0.0000033333333333333333"},
        {"43143ff3c1cb0959", "1424953923781206.2"},
        // The samples published with the reference number test file.
        {"4340000000000001", "9007199254740994"},
        {"4340000000000002", "9007199254740996"},
      };
      for (String[] row : table) {
        double d = Double.longBitsToDouble(Long.parseUnsignedLong(row[0], 16));
        String rfc8785 = row[1];
        assertThat(EcmaNumberOracle.toString(d)).as("oracle " + row[0]).isEqualTo(rfc8785);
        assertCanonical("[" + rfc8785 + "]", "[" + rfc8785 + "]");
        BigDecimal exact = new BigDecimal(d);
        assertCanonical(
            "[" + exact + "]", "[" + ExactNumberOracle.canonical(exact) + "]"); // all digits
        assertCanonical(
            "[" + Double.toString(d) + "]",
            "[" + ExactNumberOracle.canonical(new BigDecimal(Double.toString(d))) + "]");
      }
    }

    @Test
    void nanAndInfinityAreNotJson() {
      for (String json : List.of("[NaN]", "[Infinity]", "[-Infinity]")) {
        assertThatThrownBy(() -> CanonicalJson.canonicalize(utf8(json)))
            .as(json)
            .isInstanceOf(InvalidJsonException.class);
      }
    }
  }

  /** Issue 8 section 1: numbers keep their exact decimal value. */
  @Nested
  class Numbers {
    @Test
    void spellingsOfOneAreOne() {
      for (String one :
          List.of(
              "1", "1.0", "1e0", "10E-1", "0.1e1", "100E-2", "1.00000", "1E+0", "0.001e3",
              "1e00000")) {
        assertCanonical("[" + one + "]", "[1]");
      }
      assertCanonical(
          "[1e0000000000000000000000000000001, 1e-000000000000000000000001]", "[10,0.1]");
      for (String zero :
          List.of(
              "0",
              "-0",
              "0.0",
              "-0.0",
              "0e10",
              "-0E-5",
              "0.000e+99999999999",
              "0e-400",
              "0e-99999999999999999999999999")) {
        assertCanonical("[" + zero + "]", "[0]");
      }
    }

    @Test
    void digitsBeyondADoubleAreKept() {
      assertCanonical(
          "[820982911946154508, 820982911946154509, 8.20982911946154509e17]",
          "[820982911946154508,820982911946154509,820982911946154509]");
      assertCanonical(
          "[9007199254740993, 18446744073709551615, -9223372036854775809]",
          "[9007199254740993,18446744073709551615,-9223372036854775809]");
      assertCanonical(
          "[0.1000000000000000055511151231257827, 0.30000000000000004, 0.3]",
          "[0.1000000000000000055511151231257827,0.30000000000000004,0.3]");
      assertCanonical("[4.9e-324, 5e-324]", "[4.9e-324,5e-324]");
    }

    @Test
    void aHundredDigitIntegerIsKeptExactly() {
      String hundred = "1234567890".repeat(10);
      // Its last digit is 0: the canonical digits end at the last non-zero one.
      assertCanonical("[" + hundred + "]", "[1." + hundred.substring(1, 99) + "e+99]");
      String other = hundred.substring(0, 99) + "1";
      assertThat(CanonicalJson.canonicalize(utf8("[" + other + "]")))
          .isNotEqualTo(CanonicalJson.canonicalize(utf8("[" + hundred + "]")));
      assertCanonical("[" + "1" + "0".repeat(99) + "]", "[1e+99]");
    }

    @Test
    void layoutIsEcmaScriptsWithTheExactDigits() {
      assertCanonical(
          "[1e21, 1e20, 1e-7, 1e-6, 123456789012345678901234]",
          "[1e+21,100000000000000000000,1e-7,0.000001,1.23456789012345678901234e+23]");
      assertCanonical("[-1.5e-7, 0.1, 12.50, 2.5E+2, 1.2e-6]", "[-1.5e-7,0.1,12.5,250,0.0000012]");
      assertCanonical(
          "[999999999999999, 9999999999999999, 123456789012345678901, 1234567890123456789012]",
          "[999999999999999,9999999999999999,123456789012345678901,1.234567890123456789012e+21]");
      assertCanonical(
          "[1234567890123456789012.5, 0.0000012345678901234567890123]",
          "[1.2345678901234567890125e+21,0.0000012345678901234567890123]");
    }

    @Test
    void shortestDoubleDigitsAreKeptAsTheyAre() {
      assertCanonical(
          "[2.0E-3, 1.0E23, 2E23, 8.41E21, 5.0E-324]", "[0.002,1e+23,2e+23,8.41e+21,5e-324]");
    }

    /**
     * The range is the decimal exponents of doubles: a non-zero magnitude from 1e-324 to below
     * 1e309. Outside it a number is refused, never rounded to 0 or infinity.
     */
    @Test
    void numbersOutsideTheRangeAreRefusedNotRounded() {
      assertCanonical(
          "[1e-324, -9.9e308, 9.999999999999999999e308, 2e308]",
          "[1e-324,-9.9e+308,9.999999999999999999e+308,2e+308]");
      for (String json :
          List.of(
              "1e400",
              "-1e400",
              "1e309",
              "10e308",
              "1e-400",
              "-1e-325",
              "0.1e-324",
              "1e999999999999",
              "1e-99999999999999999999",
              "1" + "0".repeat(309),
              "9e99999999999999999999999999999",
              "1e-9223372036854775808",
              "1e9223372036854775807")) {
        NumberOutOfRangeException e =
            catchThrowableOfType(
                NumberOutOfRangeException.class,
                () -> CanonicalJson.canonicalize(utf8("{\"a\": " + json + "}")));
        assertThat(e).as(json).isNotNull();
        assertThat(e.offset()).as(json).isEqualTo(6);
        assertThat(e.getMessage())
            .as(json)
            .contains("outside the range")
            .contains("send it as a JSON string")
            .doesNotContain("not JSON");
      }
    }

    /**
     * Where a number is spelled with at most 15 significant digits and lies in the normal double
     * range, its exact form is RFC 8785's form (the digits are the double's shortest ones), over
     * the whole exponent range; elsewhere it is the exact value.
     */
    @Test
    void agreesWithRfc8785WhereTheDigitsAreTheDoublesShortest() {
      long seed = new Random().nextLong();
      System.out.println("agreesWithRfc8785WhereTheDigitsAreTheDoublesShortest seed: " + seed);
      Random random = new Random(seed);
      for (int i = 0; i < 20_000; i++) {
        StringBuilder digits = new StringBuilder().append((char) ('1' + random.nextInt(9)));
        for (int k = random.nextInt(random.nextBoolean() ? 15 : 25); k > 0; k--) {
          digits.append((char) ('0' + random.nextInt(10)));
        }
        int point = random.nextInt(digits.length() + 1);
        String mantissa =
            point == digits.length()
                ? digits.toString()
                : (point == 0 ? "0" : digits.substring(0, point)) + "." + digits.substring(point);
        String exponent = random.nextBoolean() ? "" : "e" + random.nextInt(-340, 330);
        if (exponent.isEmpty() && random.nextBoolean()) {
          mantissa = "0." + "0".repeat(random.nextInt(9)) + digits;
        }
        String text = (random.nextBoolean() ? "-" : "") + mantissa + exponent;
        BigDecimal exact = new BigDecimal(text);
        if (!ExactNumberOracle.inRange(exact)) {
          assertThatThrownBy(() -> CanonicalJson.canonicalize(utf8("[" + text + "]")))
              .as("seed %d: %s", seed, text)
              .isInstanceOf(NumberOutOfRangeException.class);
          continue;
        }
        String canonical =
            new String(CanonicalJson.canonicalize(utf8("[" + text + "]")), StandardCharsets.UTF_8);
        assertThat(canonical)
            .as("seed %d: %s", seed, text)
            .isEqualTo("[" + ExactNumberOracle.canonical(exact) + "]");
        double d = exact.doubleValue();
        if (exact.stripTrailingZeros().precision() <= 15
            && Double.isFinite(d)
            && Math.abs(d) >= Double.MIN_NORMAL) {
          assertThat(canonical)
              .as("seed %d: %s", seed, text)
              .isEqualTo("[" + EcmaNumberOracle.toString(d) + "]");
        }
      }
    }

    /** Every double's RFC 8785 form is a fixed point: Idem reads those digits as they are. */
    @Test
    void everyRfc8785NumberIsAFixedPoint() {
      long seed = new Random().nextLong();
      System.out.println("everyRfc8785NumberIsAFixedPoint seed: " + seed);
      SplittableRandom random = new SplittableRandom(seed);
      for (int i = 0; i < 20_000; i++) {
        String rfc8785 = EcmaNumberOracle.toString(JsonModel.randomDouble(random));
        assertCanonical("[" + rfc8785 + "]", "[" + rfc8785 + "]");
      }
    }
  }

  @Nested
  class Strings {
    @Test
    void escapesAreRewrittenTheJcsWay() {
      assertCanonical(
          "[\"\\/\\u00e9\\u00E9\\u001F\\u007f\\b\\f\\n\\r\\t\\u0008\\\"\\\\\"]",
          "[\"/éé\\u001f\u007f\\b\\f\\n\\r\\t\\b\\\"\\\\\"]");
      assertCanonical(
          "[\"\\ud83d\\ude02\", \"\uD83D\uDE02\"]", "[\"\uD83D\uDE02\",\"\uD83D\uDE02\"]");
      assertCanonical("[\"\\u2028\\u2029\"]", "[\"\u2028\u2029\"]");
    }

    @Test
    void loneSurrogatesAreErrors() {
      for (String json :
          List.of("[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800x\"]", "[\"\\ud800\\u0041\"]")) {
        assertThatThrownBy(() -> CanonicalJson.canonicalize(utf8(json)))
            .as(json)
            .isInstanceOf(InvalidJsonException.class)
            .hasMessageContaining("lone surrogate");
      }
      // A surrogate encoded directly in (CESU-style) UTF-8 is not UTF-8 at all.
      assertInvalid(new byte[] {'"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"'}, "UTF-8");
    }

    @Test
    void invalidUtf8IsAnError() {
      assertInvalid(new byte[] {'"', (byte) 0xC0, (byte) 0xAF, '"'}, "UTF-8"); // overlong '/'
      assertInvalid(new byte[] {'"', (byte) 0xE0, (byte) 0x80, (byte) 0xAF, '"'}, "UTF-8");
      assertInvalid(
          new byte[] {'"', (byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"'}, "UTF-8");
      assertInvalid(new byte[] {'"', (byte) 0x80, '"'}, "UTF-8");
      assertInvalid(new byte[] {'"', (byte) 0xE2, (byte) 0x82, '"'}, "UTF-8");
      assertInvalid(new byte[] {'"', (byte) 0xFF, '"'}, "UTF-8");
    }

    @Test
    void rawControlCharactersAreErrors() {
      assertInvalid(utf8("[\"a\tb\"]"), "must be escaped");
      assertInvalid(utf8("[\"a\nb\"]"), "must be escaped");
    }
  }

  @Nested
  class Structure {
    @Test
    void duplicateMemberNamesAreErrors() {
      assertInvalid(utf8("{\"a\":1,\"a\":2}"), "duplicate member name \"a\"");
      assertInvalid(utf8("{\"b\":1,\"a\":1,\"b\":2}"), "duplicate member name \"b\"");
      // The same name spelled two ways is still the same name.
      assertInvalid(utf8("{\"é\":1,\"\\u00e9\":2}"), "duplicate member name \"é\"");
      assertInvalid(utf8("[{\"x\":{\"n\":1,\"n\":1}}]"), "duplicate member name \"n\"");
    }

    @Test
    void duplicatesAreFoundInLargeObjects() {
      StringBuilder sb = new StringBuilder("{");
      for (int i = 0; i < 500; i++) {
        sb.append("\"k").append((i * 7919) % 500).append("\":").append(i).append(',');
      }
      sb.append("\"k250\":0}");
      assertInvalid(utf8(sb.toString()), "duplicate member name \"k250\"");
    }

    @Test
    void nestingIsLimited() {
      int max = CanonicalJson.MAX_DEPTH;
      byte[] deepest = utf8("[".repeat(max) + "]".repeat(max));
      assertThat(CanonicalJson.canonicalize(deepest)).isEqualTo(deepest);
      assertInvalid(utf8("[".repeat(max + 1) + "]".repeat(max + 1)), "nesting deeper than 256");
      assertInvalid(utf8("{\"a\":".repeat(max + 1) + "1" + "}".repeat(max + 1)), "nesting deeper");
    }

    @Test
    void malformedJsonIsAnErrorWithAnOffset() {
      assertThat(invalid(utf8("{\"a\":1,}")).offset()).isEqualTo(7);
      assertThat(invalid(utf8("{\"a\" 1}")).getMessage())
          .isEqualTo("not JSON: expected ':' after a member name at byte 5");
      for (String json :
          List.of(
              "",
              " ",
              "{",
              "[1,]",
              "[01]",
              "[1.]",
              "[.5]",
              "[+1]",
              "[1e]",
              "[-]",
              "tru",
              "nul",
              "[true false]",
              "{} {}",
              "{1:2}",
              "['a']",
              "[\"a]",
              "[\"\\x\"]",
              "[\"\\u12\"]",
              "{\"a\":}")) {
        assertThatThrownBy(() -> CanonicalJson.canonicalize(utf8(json)))
            .as("'%s'", json)
            .isInstanceOf(InvalidJsonException.class)
            .hasMessageStartingWith("not JSON: ");
      }
    }

    /** Whitespace on either side of ':' and ',' (the parser tests the compact spelling first). */
    @Test
    void whitespaceAroundColonsAndCommasIsDroppedAndErrorsPointPastIt() {
      assertCanonical("{\"b\" :1 ,\"a\"\t:\n2\r}", "{\"a\":2,\"b\":1}");
      assertCanonical("{\"b\":1, \"a\":2 }", "{\"a\":2,\"b\":1}");
      assertThat(invalid(utf8("{\"a\"  x}")).getMessage())
          .isEqualTo("not JSON: expected ':' after a member name at byte 6");
      assertThat(invalid(utf8("{\"a\":1  x}")).getMessage())
          .isEqualTo("not JSON: expected ',' or '}' in an object at byte 8");
      assertThat(invalid(utf8("{\"a\":1 ")).getMessage())
          .isEqualTo("not JSON: expected ',' or '}' in an object at byte 7");
      assertThat(invalid(utf8("{\"a\":1\u0000}")).getMessage())
          .isEqualTo("not JSON: expected ',' or '}' in an object at byte 6");
    }

    @Test
    void scalarsAndWhitespaceAtTheTopLevel() {
      assertCanonical(" \t\n\"x\"\r\n", "\"x\"");
      assertCanonical("null", "null");
      assertCanonical("-12", "-12");
      assertCanonical("\uFEFF{\"a\" : [ ] }", "{\"a\":[]}"); // a leading BOM is ignored
    }
  }

  @Nested
  class Properties {
    /** Random values, spelled at random, canonicalize to the independent reference form. */
    @Test
    void randomSpellingsCanonicalizeToTheReferenceForm() {
      long seed = new SplittableRandom().nextLong();
      SplittableRandom random = new SplittableRandom(seed);
      for (int i = 0; i < 5_000; i++) {
        Object value = JsonModel.randomValue(random, 0);
        String spelled = JsonModel.spell(value, random);
        String expected = JsonModel.canonical(value);
        assertThat(new String(CanonicalJson.canonicalize(utf8(spelled)), StandardCharsets.UTF_8))
            .as("seed %d: %s", seed, spelled)
            .isEqualTo(expected);
      }
    }

    /** Reordering members (and respelling everything else) never changes the output. */
    @Test
    void memberOrderNeverMatters() {
      long seed = new SplittableRandom().nextLong();
      SplittableRandom random = new SplittableRandom(seed);
      for (int i = 0; i < 2_000; i++) {
        Object value = JsonModel.randomValue(random, 0);
        byte[] first = CanonicalJson.canonicalize(utf8(JsonModel.spell(value, random)));
        for (int j = 0; j < 3; j++) {
          String again = JsonModel.spell(value, random);
          assertThat(CanonicalJson.canonicalize(utf8(again)))
              .as("seed %d: %s", seed, again)
              .isEqualTo(first);
          assertThat(CanonicalJson.sha256(utf8(again))).isEqualTo(sha256(first));
        }
      }
    }

    @Test
    void canonicalFormIsAFixedPoint() {
      long seed = new SplittableRandom().nextLong();
      SplittableRandom random = new SplittableRandom(seed);
      for (int i = 0; i < 2_000; i++) {
        byte[] once =
            CanonicalJson.canonicalize(
                utf8(JsonModel.spell(JsonModel.randomValue(random, 0), random)));
        assertThat(CanonicalJson.canonicalize(once)).as("seed %d", seed).isEqualTo(once);
      }
    }
  }

  @Test
  void sha256AndFingerprintHashTheCanonicalForm() {
    byte[] json = utf8("{ \"b\": [1.0, 2], \"a\": \"\\u00e9\" }");
    byte[] canonical = CanonicalJson.canonicalize(json);
    assertThat(new String(canonical, StandardCharsets.UTF_8))
        .isEqualTo("{\"a\":\"é\",\"b\":[1,2]}");
    assertThat(CanonicalJson.sha256(json)).isEqualTo(sha256(canonical));
    assertThat(CanonicalJson.fingerprint(json)).isEqualTo(Fingerprint.sha256(canonical));
    assertThat(CanonicalJson.fingerprint(utf8("{\"a\":\"é\",\"b\":[1,2.0]}")))
        .isEqualTo(CanonicalJson.fingerprint(json));
  }

  @Test
  void largeInputsAreHandledAndTheBufferIsReleased() {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < 100_000; i++) {
      sb.append(i > 0 ? "," : "").append("{\"v\":1e5,\"k\":\"").append(i).append("\"}");
    }
    sb.append(']');
    byte[] canonical = CanonicalJson.canonicalize(utf8(sb.toString()));
    assertThat(new String(canonical, StandardCharsets.UTF_8))
        .startsWith("[{\"k\":\"0\",\"v\":100000},{\"k\":\"1\",\"v\":100000},")
        .endsWith(",{\"k\":\"99999\",\"v\":100000}]");
    assertThat(CanonicalJson.canonicalize(utf8("[1]"))).isEqualTo(utf8("[1]"));
  }

  private static void assertCanonical(String input, String expected) {
    assertThat(new String(CanonicalJson.canonicalize(utf8(input)), StandardCharsets.UTF_8))
        .as(input)
        .isEqualTo(expected);
  }

  private static void assertInvalid(byte[] json, String message) {
    assertThat(invalid(json).getMessage()).contains(message);
  }

  private static InvalidJsonException invalid(byte[] json) {
    try {
      CanonicalJson.canonicalize(json);
    } catch (InvalidJsonException e) {
      return e;
    }
    throw new AssertionError("expected an InvalidJsonException");
  }

  private static byte[] sha256(byte[] bytes) {
    return Sha256Words.newDigest().digest(bytes);
  }
}
