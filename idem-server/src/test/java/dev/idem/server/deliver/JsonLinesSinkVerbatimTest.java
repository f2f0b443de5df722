package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ManualTimeSource;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A body the pipeline has checked is copied into its line without parsing it when that gives the
 * same bytes; these tests pin that every line is byte for byte the line of the parsing copy.
 */
class JsonLinesSinkVerbatimTest {
  @TempDir Path dir;

  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.parse("2026-03-01T12:00:00Z"));

  /** Bodies near every rule of the verbatim check, each one well-formed JSON. */
  private static final List<String> EDGES =
      List.of(
          "{\"id\":\"run-0-1\",\"type\":\"order.paid\",\"amount\":4200,\"currency\":\"eur\","
              + "\"customer\":{\"id\":\"c-1\"}}",
          "{}",
          "[]",
          "0",
          "-0",
          "[-0,0,-10,10]",
          "-1",
          "123456789012345678901234567890123456789",
          "-123456789012345678901234567890123456789",
          "2147483648",
          "-9223372036854775809",
          "1.0",
          "1.50",
          "1e2",
          "1E2",
          "-1.5e-7",
          "100e+3",
          "[true,false,null]",
          "true",
          "\"just a string\"",
          "\"\"",
          "{\"e\":\"e\",\"E\":\"1e5\",\"d\":\"1.5\",\"m\":\"-0\"}",
          "{\"esc\":\"a\\\"b\"}",
          "{\"esc\":\"a\\\\b\"}",
          "{\"esc\":\"a\\/b\"}",
          "{\"esc\":\"\\u0041\\u00e9\\ud83d\\ude00\"}",
          "{\"esc\":\"tab\\there\\nline\\r\\b\\f\"}",
          "{\"raw\":\"\u00e9\u20ac\u2028\u2029\ud83d\ude00\u007f\"}",
          "{\"slash\":\"a/b\",\"ascii\":\" !#$%&'()*+,-./:;<=>?@[]^_`{|}~\"}",
          "{ \"a\" : 1 }",
          "{\"a\":1}\n",
          "\n{\"a\":1}",
          "{\"a\":[1,\t2]}",
          "{\"a\":[1,\r\n2]}",
          "{\"n\":[0,1,-2,30],\"t\":true,\"f\":false,\"z\":null}",
          "[[[[[[[[[[\"deep\"]]]]]]]]]]");

  @Test
  void everyCheckedBodyGetsTheLineOfTheParsingCopy() throws Exception {
    List<String> bodies = new ArrayList<>(EDGES);
    Random random = new Random(12);
    for (int i = 0; i < 3_000; i++) {
      StringBuilder b = new StringBuilder();
      value(b, random, 0);
      bodies.add(b.toString());
    }

    assertSameLines(bodies, null);
    assertSameLines(bodies, "cust-9");
  }

  @Test
  void stringsThatNeedEscapesOutsideTheEventGetTheLineOfTheParsingCopy() throws Exception {
    // The pipeline id, key and ordering key are written by hand only when they need no escape.
    List<String> bodies = List.of("{\"a\":1}");
    for (String orderingKey :
        List.of("plain", "quote\"d", "back\\slash", "tab\tbed", "caf\u00e9", "\ud83d\ude00", "")) {
      assertSameLines(bodies, orderingKey);
    }
  }

  @Test
  void theBenchmarksBodyIsCopiedWithoutParsing() {
    // The service benchmark's events (service-dup50.lua) are compact, unescaped, integer-only.
    byte[] body = EDGES.get(0).getBytes(StandardCharsets.UTF_8);

    assertThat(JsonLinesSink.verbatim(body)).isTrue();
    assertThat(JsonLinesSink.plain("bench:" + "ab".repeat(32))).isTrue();
  }

  private void assertSameLines(List<String> bodies, String orderingKey) throws Exception {
    Path checked = dir.resolve("checked.jsonl");
    Path parsed = dir.resolve("parsed.jsonl");
    Files.deleteIfExists(checked);
    Files.deleteIfExists(parsed);
    try (Sink a = JsonLinesSink.file(checked, false, clock);
        Sink b = JsonLinesSink.file(parsed, false, clock)) {
      for (int i = 0; i < bodies.size(); i++) {
        byte[] body = bodies.get(i).getBytes(StandardCharsets.UTF_8);
        String key = "orders:" + i;
        // Given the same body, once marked as checked by the pipeline and once not
        DeliveryOutcome fast =
            a.deliver(new Delivery("orders", key, orderingKey, body, Map.of(), true));
        DeliveryOutcome slow = b.deliver(new Delivery("orders", key, orderingKey, body, Map.of()));

        // Then both are delivered (every body here is JSON) ...
        assertThat(fast).as(bodies.get(i)).isEqualTo(slow);
        if (i % 3 == 0) {
          clock.advanceMillis(1);
        }
      }
    }
    // ... and both files hold the same bytes, line for line
    List<String> expected = Files.readAllLines(parsed, StandardCharsets.UTF_8);
    assertThat(expected).hasSize(bodies.size());
    List<String> actual = Files.readAllLines(checked, StandardCharsets.UTF_8);
    assertThat(actual).hasSameSizeAs(expected);
    for (int i = 0; i < expected.size(); i++) {
      assertThat(actual.get(i)).as("the line of %s", bodies.get(i)).isEqualTo(expected.get(i));
    }
    assertThat(Files.readAllBytes(checked)).isEqualTo(Files.readAllBytes(parsed));
  }

  private static final String[] PIECES = {
    "a",
    "Z",
    "0",
    "9",
    "e",
    "E",
    ".",
    "-",
    "+",
    " ",
    "/",
    "\\/",
    "\\\"",
    "\\\\",
    "\\n",
    "\\t",
    "\\u0000",
    "\\u001f",
    "\\u00e9",
    "\\ud83d\\ude00",
    "\u00e9",
    "\u20ac",
    "\ud83d\ude00",
    "\u007f",
    "'",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "true",
    "1e5",
    "-0"
  };

  private static void value(StringBuilder b, Random r, int depth) {
    int kind = r.nextInt(depth > 4 ? 5 : 7);
    switch (kind) {
      case 0 -> string(b, r);
      case 1 -> b.append(r.nextInt(2001) - 1000);
      case 2 -> b.append(number(r));
      case 3 -> b.append(r.nextBoolean() ? "true" : r.nextBoolean() ? "false" : "null");
      case 4 -> b.append(r.nextBoolean() ? Long.toString(r.nextLong()) : "-0");
      case 5 -> {
        b.append('[');
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            b.append(space(r)).append(',');
          }
          b.append(space(r));
          value(b, r, depth + 1);
        }
        b.append(']');
      }
      default -> {
        b.append('{');
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            b.append(',');
          }
          b.append(space(r)).append("\"k").append(i);
          if (r.nextInt(4) == 0) {
            b.append(PIECES[r.nextInt(PIECES.length)]);
          }
          b.append('"').append(space(r)).append(':');
          value(b, r, depth + 1);
        }
        b.append(space(r)).append('}');
      }
    }
  }

  private static String space(Random r) {
    return switch (r.nextInt(12)) {
      case 0 -> " ";
      case 1 -> "\n";
      case 2 -> "\t";
      case 3 -> "\r\n";
      default -> "";
    };
  }

  private static String number(Random r) {
    return switch (r.nextInt(6)) {
      case 0 -> r.nextInt(100) + "." + r.nextInt(100);
      case 1 -> r.nextInt(100) + "e" + (r.nextInt(20) - 10);
      case 2 -> "-" + r.nextInt(10) + ".0E+" + r.nextInt(5);
      case 3 -> "1" + "0".repeat(r.nextInt(40));
      case 4 -> "-" + (1 + r.nextInt(9)) + "0".repeat(r.nextInt(25));
      default -> Double.toString(r.nextDouble());
    };
  }

  private static void string(StringBuilder b, Random r) {
    b.append('"');
    int n = r.nextInt(6);
    for (int i = 0; i < n; i++) {
      b.append(PIECES[r.nextInt(PIECES.length)]);
    }
    b.append('"');
  }
}
