package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void lineAndParagraphSeparatorsAreEscapedWithTheirOwnCodePoints() {
    // Regression (issue 9 §5): they were written as \u0028 and \u0029, i.e. '(' and ')'.
    assertThat(Json.quote("a\u2028b\u2029c")).isEqualTo("\"a\\u2028b\\u2029c\"");
  }

  @Test
  void controlCharactersQuotesAndBackslashesAreEscaped() {
    assertThat(Json.quote("\"\\\n\r\t\u0001\u001f"))
        .isEqualTo("\"\\\"\\\\\\n\\r\\t\\u0001\\u001f\"");
  }
}
