package dev.idem.server.pipeline;

/** Writes JSON string literals without a JSON library, for the service's small fixed answers. */
public final class Json {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private Json() {}

  /**
   * Appends {@code s} as a JSON string literal, escaping quotes, backslashes and control
   * characters.
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
            out.append("\\u00").append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
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
