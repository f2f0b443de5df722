package dev.idem.server.signature;

import dev.idem.TimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.time.Duration;
import java.util.Base64;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** Parsing and checks shared by the verifiers. Messages never contain a secret or a signature. */
final class SignatureSupport {
  /** Unix seconds up to the year 5138; more digits are rejected before any arithmetic. */
  private static final int MAX_TIMESTAMP_DIGITS = 11;

  private SignatureSupport() {}

  /**
   * Reads a header that must be present.
   *
   * @throws SignatureException MISSING if it is absent or blank
   */
  static String requireHeader(
      Function<String, @Nullable String> headers, String name, String scheme) {
    @Nullable String value = headers.apply(name);
    if (value == null || value.isBlank()) {
      throw new SignatureException(
          Reason.MISSING,
          "the " + name + " header is missing; " + scheme + " signs every delivery with it");
    }
    return value.trim();
  }

  /**
   * Reads a header that must be present under one of several names (a provider's current and older
   * spellings), the first name first.
   *
   * @throws SignatureException MISSING naming every accepted spelling
   */
  static String requireHeader(
      Function<String, @Nullable String> headers, String scheme, String name, String alias) {
    @Nullable String value = optionalHeader(headers, name);
    if (value == null) {
      value = optionalHeader(headers, alias);
    }
    if (value == null) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + name
              + " header (or "
              + alias
              + ") is missing; "
              + scheme
              + " signs every delivery with it");
    }
    return value;
  }

  /**
   * Reads an optional header, trimmed.
   *
   * @return the value, or null if absent or blank
   */
  static @Nullable String optionalHeader(Function<String, @Nullable String> headers, String name) {
    @Nullable String value = headers.apply(name);
    if (value == null) {
      return null;
    }
    String trimmed = value.trim();
    return trimmed.isEmpty() ? null : trimmed;
  }

  /**
   * Parses unix seconds: 1 to 11 ASCII digits.
   *
   * @return the seconds, or -1 if the text is not such a number
   */
  static long parseUnixSeconds(String text) {
    int n = text.length();
    if (n == 0 || n > MAX_TIMESTAMP_DIGITS) {
      return -1;
    }
    long value = 0;
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  /**
   * Rejects a signed timestamp further than {@code tolerance} from now, in either direction.
   *
   * @throws SignatureException STALE naming the distance and the tolerance
   */
  static void checkTolerance(
      long signedSeconds, TimeSource time, Duration tolerance, String header) {
    long skewMillis = time.wallMillis() - signedSeconds * 1000L;
    if (Math.abs(skewMillis) > tolerance.toMillis()) {
      throw new SignatureException(
          Reason.STALE,
          "the "
              + header
              + " timestamp is "
              + Math.abs(skewMillis) / 1000
              + "s "
              + (skewMillis > 0 ? "in the past" : "in the future")
              + ", beyond the tolerance of "
              + tolerance.toSeconds()
              + "s; a replayed delivery, or a clock that is off (check NTP)");
    }
  }

  /**
   * Decodes lower- or upper-case hex.
   *
   * @return the bytes, or null if the text is not hex of the expected length
   */
  static byte @Nullable [] decodeHex(String text, int expectedBytes) {
    if (text.length() != expectedBytes * 2) {
      return null;
    }
    byte[] out = new byte[expectedBytes];
    for (int i = 0; i < expectedBytes; i++) {
      int hi = hexValue(text.charAt(2 * i));
      int lo = hexValue(text.charAt(2 * i + 1));
      if (hi < 0 || lo < 0) {
        return null;
      }
      out[i] = (byte) ((hi << 4) | lo);
    }
    return out;
  }

  private static int hexValue(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  /**
   * Decodes standard base64 (RFC 4648 section 4, with padding).
   *
   * @return the bytes, or null if the text is not base64
   */
  static byte @Nullable [] decodeBase64(String text) {
    try {
      return Base64.getDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
