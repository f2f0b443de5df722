package dev.idem.key;

import dev.idem.Fingerprint;
import java.util.Arrays;

/**
 * Canonical JSON for identity: one byte sequence for every JSON value, whatever the member order,
 * whitespace, escapes and number spellings of the input, and different bytes for different values.
 * The default key and {@link #fingerprint(byte[])} hash this form, and field keys use it for a
 * field's value, so two bodies that differ only in those respects are duplicates and no two
 * different bodies are.
 *
 * <p>The form is RFC 8785 (JSON Canonicalization Scheme) except for numbers: no whitespace; object
 * members sorted by the UTF-16 code units of their names; strings in UTF-8 with only {@code "},
 * {@code \} and the controls below U+0020 escaped ({@code \b \t \n \f \r}, else <code>
 * &#92;u00xx</code> in lowercase hex), everything else as is (no Unicode normalisation); {@code
 * true}, {@code false}, {@code null} as they are.
 *
 * <h2>Numbers: the exact decimal value</h2>
 *
 * <p>A number is written from its exact decimal value, never through a double: its significant
 * digits {@code D} (the first non-zero digit to the last non-zero one: no leading or trailing
 * zeros) and the exponent {@code n} with value {@code 0.D x 10^n}, laid out as ECMAScript lays out
 * digits: with {@code k} digits, {@code D} followed by {@code n - k} zeros if {@code k <= n <= 21};
 * {@code D} with a point after {@code n} digits if {@code 0 < n <= 21}; {@code 0.}, {@code -n}
 * zeros and {@code D} if {@code -6 < n <= 0}; else the first digit, {@code .} and the rest (if
 * any), {@code e}, the sign ({@code +} or {@code -}) and {@code n - 1} in decimal. A negative
 * number has a leading {@code -}; every zero ({@code -0}, {@code 0.0}, {@code 0e5}) is {@code 0}.
 * So {@code 1}, {@code 1.0}, {@code 1e0} and {@code 10E-1} are {@code 1}; {@code 1E30} is {@code
 * 1e+30}; {@code 820982911946154508} and {@code 820982911946154509} stay as they are.
 *
 * <p>Where this departs from RFC 8785: RFC 8785 writes the IEEE-754 double nearest to the number
 * (its shortest round-trip digits), so it rounds a number with more digits than a double holds
 * ({@code 820982911946154509} becomes {@code 820982911946154500}, {@code 333333333.33333329}
 * becomes {@code 333333333.3333333}), reads {@code 1e-400} as {@code 0} and cannot write {@code
 * 1e400}. Here every digit is kept. For every number whose digits are its double's shortest digits
 * (e.g. any number of at most 15 significant digits in the normal double range, and every RFC 8785
 * output) both forms are the same text.
 *
 * <p>Range: a non-zero number's decimal exponent ({@code n - 1}, the {@code e} of {@code d.ddd x
 * 10^e}) must be in [-324, 308], the decimal exponents of IEEE-754 doubles: a magnitude from {@code
 * 1e-324} to below {@code 1e309}. A number outside it is a {@link NumberOutOfRangeException}: it is
 * refused, never rounded to 0 or infinity. The number of digits is not limited (the body's size
 * limits it).
 *
 * <p>The input must be I-JSON (RFC 7493), else {@link InvalidJsonException}: well-formed UTF-8 JSON
 * (a leading byte order mark is ignored), no duplicate member names, no lone surrogates (raw or
 * <code>&#92;u</code> escaped), numbers inside the range above, and at most {@link #MAX_DEPTH}
 * nested arrays and objects.
 *
 * <p>Streaming: one pass, no tree, per-thread buffers (a buffer that grows past 256 KiB for one
 * huge input is released afterwards); in the steady state nothing is allocated but the result.
 * Numbers need no floating point and no {@code BigDecimal}. Thread-safe.
 */
public final class CanonicalJson {
  /** The deepest nesting of arrays and objects accepted; the outermost array or object is 1. */
  public static final int MAX_DEPTH = 256;

  private CanonicalJson() {}

  /**
   * Returns the canonical form of a JSON text.
   *
   * @param json UTF-8 JSON; not changed
   * @return the canonical UTF-8 bytes (a new array)
   * @throws InvalidJsonException if the input is not I-JSON
   */
  public static byte[] canonicalize(byte[] json) {
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.canonicalize(json, 0, json.length);
      return Arrays.copyOf(c.out, c.outLen);
    } finally {
      c.trim();
    }
  }

  /**
   * Returns SHA-256 of the canonical form of a JSON text, without copying the canonical form out.
   *
   * @param json UTF-8 JSON; not changed
   * @return the 32-byte digest (a new array)
   * @throws InvalidJsonException if the input is not I-JSON
   */
  public static byte[] sha256(byte[] json) {
    byte[] digest = new byte[32];
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.sha256(json, digest);
    } finally {
      c.trim();
    }
    return digest;
  }

  /**
   * Returns the fingerprint of a JSON payload: SHA-256 of its canonical form, so a resend whose
   * members come in another order, or whose numbers or escapes are spelled differently, has the
   * same fingerprint.
   *
   * @param json UTF-8 JSON; not changed
   * @return the fingerprint
   * @throws InvalidJsonException if the input is not I-JSON
   */
  public static Fingerprint fingerprint(byte[] json) {
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.sha256(json, c.digest);
      return Fingerprint.ofDigest(c.digest);
    } finally {
      c.trim();
    }
  }
}
