package dev.idem.server.pipeline;

/** Writes JSON string literals without a JSON library, for the service's small fixed answers. */
public final class Json {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private Json() {}

  /**
   * Appends {@code s} as a JSON string literal, escaping quotes, backslashes, control characters
   * and U+2028/U+2029 (as <code>&#92;u2028</code>, <code>&#92;u2029</code>).
   *
   * @param out where to append
   * @param s the text
   */
  public static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            // U+2028 and U+2029 are valid in JSON but end a line in JavaScript before ES2019.
            out.append("\\u")
                .append(HEX[(c >> 12) & 0xF])
                .append(HEX[(c >> 8) & 0xF])
                .append(HEX[(c >> 4) & 0xF])
                .append(HEX[c & 0xF]);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /**
   * Returns {@code s} as a JSON string literal.
   *
   * @param s the text
   * @return the quoted text
   */
  public static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2);
    quote(b, s);
    return b.toString();
  }
}
