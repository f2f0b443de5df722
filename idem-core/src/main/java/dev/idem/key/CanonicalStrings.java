package dev.idem.key;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Helpers for strings in RFC 8785 canonical form: UTF-8, with only {@code "}, {@code \} and the
 * controls below U+0020 escaped ({@code \b \t \n \f \r}, else <code>&#92;u00xx</code>). That form
 * is injective, so two names are equal exactly when their canonical bytes are.
 */
final class CanonicalStrings {
  private CanonicalStrings() {}

  /**
   * Compares two canonical string bodies (the bytes between the quotes) by their UTF-16 code units,
   * as RFC 8785 section 3.2.3 orders member names.
   *
   * <p>While both sides are plain ASCII, byte order is code unit order, so that common case needs
   * no decoding. Escapes and non-ASCII text (where UTF-8 byte order and UTF-16 order differ, e.g.
   * U+FB33 against U+1F602) fall back to decoding both names.
   */
  static int compare(byte[] buf, int aStart, int aEnd, int bStart, int bEnd) {
    int la = aEnd - aStart;
    int lb = bEnd - bStart;
    int n = Math.min(la, lb);
    boolean escaped = false;
    for (int i = 0; i < n; i++) {
      byte x = buf[aStart + i];
      byte y = buf[bStart + i];
      if (x != y) {
        if (!escaped && x > 0 && y > 0 && x != '\\' && y != '\\') {
          return x - y;
        }
        return decode(buf, aStart, aEnd).compareTo(decode(buf, bStart, bEnd));
      }
      if (x == '\\') {
        escaped = true;
      }
    }
    // The encoding is prefix-free per character: a byte prefix is a character prefix.
    return la - lb;
  }

  /** Decodes a canonical string body back to a Java string. */
  static String decode(byte[] buf, int start, int end) {
    StringBuilder sb = new StringBuilder(end - start);
    int run = start;
    int p = start;
    while (p < end) {
      if (buf[p] != '\\') {
        p++;
        continue;
      }
      sb.append(new String(buf, run, p - run, StandardCharsets.UTF_8));
      byte c = buf[p + 1];
      switch (c) {
        case 'b' -> sb.append('\b');
        case 't' -> sb.append('\t');
        case 'n' -> sb.append('\n');
        case 'f' -> sb.append('\f');
        case 'r' -> sb.append('\r');
        case 'u' -> {
          sb.append(
              (char) Integer.parseInt(new String(buf, p + 2, 4, StandardCharsets.US_ASCII), 16));
          p += 4;
        }
        default -> sb.append((char) c); // '"' or '\\'
      }
      p += 2;
      run = p;
    }
    sb.append(new String(buf, run, end - run, StandardCharsets.UTF_8));
    return sb.toString();
  }

  /**
   * Returns the canonical string body of {@code s} (no quotes).
   *
   * @throws IllegalArgumentException if {@code s} has a lone surrogate
   */
  static byte[] encode(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20) {
        out.write('\\');
        switch (c) {
          case '\b' -> out.write('b');
          case '\t' -> out.write('t');
          case '\n' -> out.write('n');
          case '\f' -> out.write('f');
          case '\r' -> out.write('r');
          default -> {
            byte[] hex = String.format("u%04x", (int) c).getBytes(StandardCharsets.US_ASCII);
            out.write(hex, 0, hex.length);
          }
        }
      } else if (c == '"' || c == '\\') {
        out.write('\\');
        out.write(c);
      } else if (c < 0x80) {
        out.write(c);
      } else {
        int cp = c;
        if (Character.isHighSurrogate(c)
            && i + 1 < s.length()
            && Character.isLowSurrogate(s.charAt(i + 1))) {
          cp = Character.toCodePoint(c, s.charAt(++i));
        } else if (Character.isSurrogate(c)) {
          throw new IllegalArgumentException("lone surrogate at index " + i);
        }
        byte[] utf8 = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
        out.write(utf8, 0, utf8.length);
      }
    }
    return out.toByteArray();
  }

  /**
   * Returns the canonical JSON string of {@code s}, with its quotes.
   *
   * @throws IllegalArgumentException if {@code s} has a lone surrogate
   */
  static byte[] quoted(String s) {
    byte[] body = encode(s);
    byte[] json = new byte[body.length + 2];
    json[0] = '"';
    System.arraycopy(body, 0, json, 1, body.length);
    json[json.length - 1] = '"';
    return json;
  }

  /**
   * Whether the canonical JSON string {@code c[start, end)} (with its quotes) is blank: empty or
   * only whitespace ({@link String#isBlank()}).
   */
  static boolean isBlank(byte[] c, int start, int end) {
    if (end - start == 2) {
      return true;
    }
    byte first = c[start + 1];
    if (first > ' ' && first != '\\') {
      return false; // printable ASCII is never whitespace
    }
    return decode(c, start + 1, end - 1).isBlank();
  }

  /** Shortens {@code s} for an error message. */
  static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 61) + "...";
  }
}
