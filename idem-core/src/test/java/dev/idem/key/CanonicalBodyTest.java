package dev.idem.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A body read once ({@link CanonicalBody}) gives every key rule exactly the key the raw body gives:
 * keys are persisted, so the way the body was read must never change them.
 */
class CanonicalBodyTest {
  static final List<String> BODIES =
      List.of(
          "{\"id\":\"evt_1\",\"amount\":4200,\"currency\":\"eur\"}",
          "{ \"currency\" : \"eur\", \"amount\" : 42.00e2, \"id\" : \"evt_1\" }",
          "{\"b\":[1,2.50,{\"z\":null,\"a\":true}],\"a\":\"\\u00e9\\n\",\"n\":820982911946154509}",
          "[1e30,-0,0.000001,1E-7,\"x\"]",
          "\"just a string\"",
          "null",
          "{\"id\":{\"y\":1,\"x\":[2,1]},\"amount\":-0.0}",
          "\uFEFF{\"id\":\"bom\"}");

  /** The event a pipeline hands on after reading its body. */
  static InboundEvent read(InboundEvent raw) {
    CanonicalBody body = CanonicalBody.read(raw.body());
    return new InboundEvent() {
      @Override
      public byte[] body() {
        return raw.body();
      }

      @Override
      public @Nullable String header(String name) {
        return raw.header(name);
      }

      @Override
      public List<Principal> principalChain() {
        return raw.principalChain();
      }

      @Override
      public CanonicalBody canonicalBody() {
        return body;
      }
    };
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void theDefaultKeyOfAReadBodyIsItsPinnedValue() {
    // Taken before the read existed; the same for both spellings of the order.
    InboundEvent e = read(InboundEvent.of(utf8(BODIES.get(1)), Map.of()));
    InboundEvent p =
        read(
            InboundEvent.builder()
                .body(utf8(BODIES.get(0)))
                .principal("https://issuer", "alice")
                .actor("https://issuer", "bot")
                .build());

    assertThat(KeyRule.defaultKey().derive(e).toHex())
        .isEqualTo("4b52bc72a8e3a3e3bc3eb63d2599c2def0de838986cce671ac64f132e5546bfa");
    assertThat(KeyRule.defaultKey().derive(p).toHex())
        .isEqualTo("eb3ab16af546db4e9e1f78ff5af859b40902fead62fb61a51d194588418cda44");
    assertThat(e.canonicalBody().fingerprint().toString())
        .isEqualTo("fingerprint:0fe1f05e99b4f4929e7bc35963627caa97bc58d95de97adbe155055b8a7571de");
  }

  @Test
  void everyRuleGivesTheSameKeyFromTheReadAsFromTheRawBody() {
    List<KeyRule> rules =
        List.of(
            KeyRule.defaultKey(),
            KeyRule.parse("id"),
            KeyRule.parse(List.of("id", "header(\"X-Id\")", "amount")),
            KeyRule.parse("b[2]"));
    for (String body : BODIES) {
      InboundEvent raw = InboundEvent.of(utf8(body), Map.of("X-Id", "h-1"));
      InboundEvent read = read(raw);
      assertThat(read.canonicalBody().toBytes()).isEqualTo(CanonicalJson.canonicalize(raw.body()));
      assertThat(read.canonicalBody().sha256()).isEqualTo(CanonicalJson.sha256(raw.body()));
      assertThat(read.canonicalBody().fingerprint())
          .isEqualTo(CanonicalJson.fingerprint(raw.body()));
      for (KeyRule rule : rules) {
        assertThat(outcome(rule, read)).as(rule + " on " + body).isEqualTo(outcome(rule, raw));
      }
    }
  }

  @Test
  void fieldPathsReadTheSameValuesFromTheRead() {
    FieldPath id = FieldPath.parse("source.id");
    for (String body : BODIES.subList(0, 2)) {
      CanonicalBody read = CanonicalBody.read(utf8(body));
      assertThat(id.extract(read)).isEqualTo(id.extract(utf8(body))).isEqualTo("evt_1");
      assertThat(id.extractJson(read)).isEqualTo(id.extractJson(utf8(body)));
    }
    assertThatThrownBy(() -> FieldPath.parse("missing").extract(CanonicalBody.read(utf8("{}"))))
        .hasMessageContaining("no field missing");
  }

  @Test
  void randomBodiesKeyTheSameFromTheReadAsFromTheRawBody() {
    Random random = new Random(20261201L);
    for (int i = 0; i < 2_000; i++) {
      String body = RandomJson.value(random, 0);
      InboundEvent raw = InboundEvent.of(utf8(body), Map.of());
      InboundEvent read;
      try {
        read = read(raw);
      } catch (InvalidJsonException e) {
        // Refused by the read: the raw body is refused alike (e.g. 2e308 is out of range).
        assertThat(outcome(KeyRule.defaultKey(), raw))
            .asString()
            .startsWith(e.getClass().getSimpleName());
        continue;
      }
      assertThat(KeyRule.defaultKey().derive(read))
          .as(body)
          .isEqualTo(KeyRule.defaultKey().derive(raw));
    }
  }

  @Test
  void theDepthLimitIsTheCallersAndTheFactsAreRecorded() {
    assertThat(CanonicalBody.read(utf8("[[[]]]"), 3).length()).isEqualTo(6);
    assertThatThrownBy(() -> CanonicalBody.read(utf8("[[[[]]]]"), 3))
        .isInstanceOf(InvalidJsonException.class)
        .hasMessageContaining("nesting deeper than 3");
    assertThatThrownBy(() -> CanonicalBody.read(utf8("[]"), CanonicalJson.MAX_DEPTH + 1))
        .isInstanceOf(IllegalArgumentException.class);

    CanonicalBody b = CanonicalBody.read(utf8("{\"abc\":[1.5e-300,12345]}"));
    assertThat(b.longestName()).isEqualTo(5);
    assertThat(b.numberReach()).isEqualTo("1.5e-300".length() + 300);
    assertThat(CanonicalBody.read(utf8("[]")).numberReach()).isZero();
  }

  @Test
  void aCompactCanonicalBodyIsSharedNotCopied() {
    byte[] body = utf8("{\"a\":1,\"b\":[true,null]}");
    CanonicalBody read = CanonicalBody.read(body);

    assertThat(read.bytes()).isSameAs(body);
    assertThat(read.toBytes()).isEqualTo(body).isNotSameAs(body);
  }

  private static Object outcome(KeyRule rule, InboundEvent e) {
    try {
      DedupKey k = rule.derive(e);
      return k;
    } catch (RuntimeException x) {
      return x.getClass().getSimpleName() + ": " + x.getMessage();
    }
  }

  /** Random JSON with the spellings that canonicalization rewrites. */
  static final class RandomJson {
    private static final String[] NUMBERS = {
      "0",
      "-0",
      "1",
      "1.0",
      "10E-1",
      "1e30",
      "1E+30",
      "0.000001",
      "1e-7",
      "-12.50",
      "820982911946154509",
      "3.14159",
      "2e308",
      "1e-324",
      "123456789012345678901234567890"
    };
    private static final String[] STRINGS = {
      "\"\"",
      "\"a\"",
      "\"\\u00e9\"",
      "\"é\"",
      "\"\\n\\t\"",
      "\"\\/\"",
      "\"😀\"",
      "\"\\ud83d\\ude00\""
    };

    static String value(Random r, int depth) {
      int k = depth > 4 ? r.nextInt(4) : r.nextInt(6);
      return switch (k) {
        case 0 -> NUMBERS[r.nextInt(NUMBERS.length)];
        case 1 -> STRINGS[r.nextInt(STRINGS.length)];
        case 2 -> new String[] {"true", "false", "null"}[r.nextInt(3)];
        case 3 -> NUMBERS[r.nextInt(NUMBERS.length)];
        case 4 -> {
          StringBuilder sb = new StringBuilder("[");
          int n = r.nextInt(4);
          for (int i = 0; i < n; i++) {
            sb.append(i > 0 ? (r.nextBoolean() ? "," : " , ") : "").append(value(r, depth + 1));
          }
          yield sb.append(']').toString();
        }
        default -> {
          StringBuilder sb = new StringBuilder("{");
          int n = r.nextInt(5);
          for (int i = 0; i < n; i++) {
            sb.append(i > 0 ? "," : "")
                .append("\"k")
                .append((char) ('a' + (n - i)))
                .append(i)
                .append("\":")
                .append(value(r, depth + 1));
          }
          yield sb.append('}').toString();
        }
      };
    }
  }
}
