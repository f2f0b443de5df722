package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class JsonBodyCheckTest {
  final JsonBodyCheck check = new JsonBodyCheck(3, 1 << 20);

  Outcome.Rejected check(String body) {
    return check.check(body.getBytes(StandardCharsets.UTF_8));
  }

  static String code(Outcome.Rejected a) {
    return a == null ? null : a.code();
  }

  @Test
  void wellFormedValuesWithinTheLimitsPass() {
    assertThat(check("{\"a\":{\"b\":[1]}}")).isNull();
    assertThat(check("[1,2,3]")).isNull();
    assertThat(check("\"text\"")).isNull();
    assertThat(check("null")).isNull();
    assertThat(check("  {\"a\":1}\n")).isNull();
  }

  @Test
  void eachViolationHasItsCode() {
    assertThat(code(check("{\"a\":{\"b\":{\"c\":[1]}}}"))).isEqualTo("nesting_too_deep");
    assertThat(code(check("{\"a\":1,\"a\":2}"))).isEqualTo("duplicate_field");
    assertThat(code(check("{\"o\":{\"a\":1,\"a\":2}}"))).isEqualTo("duplicate_field");
    assertThat(code(check("{\"a\":"))).isEqualTo("malformed_json");
    assertThat(code(check("{'a':1}"))).isEqualTo("malformed_json");
    assertThat(code(check("{} {}"))).isEqualTo("malformed_json");
    assertThat(code(check(""))).isEqualTo("malformed_json");
    assertThat(code(check("{\"n\":" + "1".repeat(200) + "}"))).isEqualTo("malformed_json");
  }
}
