package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 §5: bodies the key rules cannot read as I-JSON are {@code malformed_json} at the check,
 * never {@code missing_key} later.
 */
class JsonBodyCheckIJsonTest {
  final JsonBodyCheck check = new JsonBodyCheck(8, 1 << 20);

  String code(byte[] body) {
    Outcome.Rejected a = check.check(body);
    return a == null ? null : a.code();
  }

  String code(String body) {
    return code(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aNumberOutsideTheDoubleRangeIsMalformed() {
    assertThat(code("{\"id\":\"a\",\"n\":1e400}")).isEqualTo("malformed_json");
    assertThat(code("{\"id\":\"a\",\"n\":-1E+400}")).isEqualTo("malformed_json");
    assertThat(code("[1.5e309]")).isEqualTo("malformed_json");
    // An underflow is refused too, never read as 0 (issue 8): 0 is spelled without digits 1-9.
    assertThat(code("{\"id\":\"a\",\"m\":1e-400}")).isEqualTo("malformed_json");
    assertThat(code("[-2.5E-999]")).isEqualTo("malformed_json");
  }

  @Test
  void numbersInsideTheRangePassWhateverTheirSpelling() {
    assertThat(code("{\"n\":1e308,\"m\":5e-324,\"k\":820982911946154508,\"z\":-0.0,\"y\":0e-999}"))
        .isNull();
  }

  @Test
  void aLoneSurrogateEscapeIsMalformedInAValueOrAName() {
    assertThat(code("{\"id\":\"\\ud800\"}")).isEqualTo("malformed_json");
    assertThat(code("{\"id\":\"x\\udc00y\"}")).isEqualTo("malformed_json");
    assertThat(code("{\"\\ud83d\":1}")).isEqualTo("malformed_json");
    assertThat(code("{\"id\":\"\\ud83d\\ude00\"}")).isNull();
  }

  @Test
  void aRawEncodedSurrogateOrOtherBadUtf8IsMalformed() {
    byte[] cesu = {'{', '"', 'a', '"', ':', '"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"', '}'};
    byte[] overlong = {'[', '"', (byte) 0xC0, (byte) 0xAF, '"', ']'};
    byte[] truncated = {'[', '"', (byte) 0xE2, (byte) 0x82};
    byte[] latin1 = "[\"caf\u00e9\"]".getBytes(StandardCharsets.ISO_8859_1);
    assertThat(code(cesu)).isEqualTo("malformed_json");
    assertThat(code(overlong)).isEqualTo("malformed_json");
    assertThat(code(truncated)).isEqualTo("malformed_json");
    assertThat(code(latin1)).isEqualTo("malformed_json");
    assertThat(code("[\"caf\u00e9 \u20ac \ud83d\ude00\"]")).isNull();
  }

  @Test
  void utf16AndUtf32BodiesAreMalformed() {
    String json = "{\"id\":\"a\"}";
    for (String cs : new String[] {"UTF-16", "UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE"}) {
      assertThat(code(json.getBytes(Charset.forName(cs)))).as(cs).isEqualTo("malformed_json");
    }
    assertThat(check.check(json.getBytes(StandardCharsets.UTF_16LE)).message())
        .contains("UTF-16 or UTF-32");
  }

  @Test
  void theExistingLimitsStillHaveTheirCodes() {
    assertThat(code("{\"a\":1,\"a\":2}")).isEqualTo("duplicate_field");
    assertThat(code("[[[[[[[[[1]]]]]]]]]")).isEqualTo("nesting_too_deep");
    assertThat(code("{} {}")).isEqualTo("malformed_json");
    assertThat(code("{\"a\":[1,{\"b\":\"c\"}],\"d\":null}")).isNull();
  }
}
