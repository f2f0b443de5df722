package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.key.CanonicalJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Issue 10 §1: the body is read once ({@link JsonBodyCheck#read}), and that one read answers every
 * body exactly as the streaming check did before (same code, same message), and hands on the
 * canonical form whenever it accepts.
 */
class JsonBodyReadTest {
  static final int MAX_DEPTH = 64;
  static final JsonBodyCheck CHECK = new JsonBodyCheck(MAX_DEPTH, 1 << 20);

  static List<byte[]> corpus() {
    List<String> texts =
        new ArrayList<>(
            List.of(
                "{\"id\":\"a\"}",
                "",
                "   ",
                "{",
                "{\"id\":\"a\"} x",
                "{}{}",
                "{\"a\":1,\"a\":2}",
                "{\"a\":1,\"\\u0061\":2}",
                "{\"a\":\"\\ud800\"}",
                "{\"\\udc00\":1}",
                "[\"\\ud83d\\ude00\"]",
                "[1.7976931348623157e308]",
                "[1.7976931348623159e308]",
                "[1.8e308]",
                "[2e308]",
                "[1e400]",
                "[2e-324]",
                "[3e-324]",
                "[5e-324]",
                "[1e-400]",
                "[0e-400]",
                "[0.0e999]",
                "[1" + "0".repeat(99) + "]",
                "[1" + "0".repeat(100) + "]",
                "[1." + "0".repeat(98) + "]",
                "[1." + "0".repeat(99) + "]",
                "[-1" + "0".repeat(99) + "]",
                "[0." + "0".repeat(323) + "1]",
                "[01]",
                "[-]",
                "[1.]",
                "[.5]",
                "[+1]",
                "[NaN]",
                "[\"a\u0001\"]",
                "[\"\\a\"]",
                "[\"\\u00zz\"]",
                "[true,false,null]",
                "[tru]",
                "/* c */ []",
                "\uFEFF{\"id\":\"bom\"}",
                "{\"id\" : \"spaced\" ,\"n\":1.50}",
                "\"str\"",
                "42",
                "null",
                "{\"a\":1}\u0000",
                "[\"\u007f\"]"));
    texts.add("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH));
    texts.add("[".repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1));
    texts.add("{\"a\":".repeat(MAX_DEPTH) + "1" + "}".repeat(MAX_DEPTH));
    texts.add("{\"a\":".repeat(MAX_DEPTH + 1) + "1" + "}".repeat(MAX_DEPTH + 1));
    texts.add("[".repeat(300) + "]".repeat(300));
    List<byte[]> bodies = new ArrayList<>();
    for (String t : texts) {
      bodies.add(t.getBytes(StandardCharsets.UTF_8));
    }
    bodies.add(new byte[] {'"', (byte) 0xC0, (byte) 0x80, '"'}); // overlong
    bodies.add(new byte[] {'"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"'}); // encoded surrogate
    bodies.add(new byte[] {'"', (byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"'});
    bodies.add(new byte[] {'"', (byte) 0xE2, (byte) 0x82, '"'}); // truncated
    bodies.add(new byte[] {'{', 0, '}'});
    bodies.add(new byte[] {(byte) 0xFF, (byte) 0xFE, '[', 0, ']', 0});
    return bodies;
  }

  static void assertSameAnswer(JsonBodyCheck check, byte[] body) {
    String shown = new String(body, StandardCharsets.UTF_8);
    shown = shown.length() > 80 ? shown.substring(0, 80) + "..." : shown;
    Outcome.Rejected before = check.check(body);
    JsonBodyCheck.Read read = check.read(body);

    assertThat(read.rejected()).as(shown).isEqualTo(before);
    if (read.canonical() != null) {
      assertThat(read.canonical().toBytes()).as(shown).isEqualTo(CanonicalJson.canonicalize(body));
    }
  }

  @Test
  void everyBodyGetsTheAnswerTheStreamingCheckGave() {
    for (byte[] body : corpus()) {
      assertSameAnswer(CHECK, body);
    }
  }

  @Test
  void aLongMemberNameIsJudgedByTheChecksNameLimit() {
    JsonBodyCheck small = new JsonBodyCheck(MAX_DEPTH, 100);
    assertSameAnswer(small, ("{\"" + "n".repeat(98) + "\":1}").getBytes(StandardCharsets.UTF_8));
    assertSameAnswer(small, ("{\"" + "n".repeat(101) + "\":1}").getBytes(StandardCharsets.UTF_8));
    assertSameAnswer(small, ("[\"" + "s".repeat(200) + "\"]").getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anOrdinaryBodyIsReadOnceAndHandedOnCanonical() {
    JsonBodyCheck.Read read = CHECK.read("{\"b\":1,\"a\":[2.50]}".getBytes(StandardCharsets.UTF_8));

    assertThat(read.rejected()).isNull();
    assertThat(new String(read.canonical().toBytes(), StandardCharsets.UTF_8))
        .isEqualTo("{\"a\":[2.5],\"b\":1}");
  }

  @Test
  void randomMutationsOfBodiesGetTheAnswerTheStreamingCheckGave() {
    Random random = new Random(10_1L);
    byte[] alphabet =
        "{}[]\",:.-+eE0123456789 \\u\"truefalsenull\u00e9".getBytes(StandardCharsets.UTF_8);
    List<byte[]> seeds = corpus();
    for (int i = 0; i < 5_000; i++) {
      byte[] body = seeds.get(random.nextInt(seeds.size())).clone();
      if (body.length == 0) {
        continue;
      }
      int edits = 1 + random.nextInt(3);
      for (int e = 0; e < edits; e++) {
        body[random.nextInt(body.length)] = alphabet[random.nextInt(alphabet.length)];
      }
      assertSameAnswer(CHECK, body);
    }
  }
}
