package dev.idem.key;

import dev.idem.Fingerprint;
import java.util.Arrays;

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): one byte sequence for every JSON value, whatever the
 * member order, whitespace, escapes and number spellings of the input. The default key and {@link
 * #fingerprint(byte[])} hash this form, so two bodies that differ only in those respects are
 * duplicates.
 *
 * <p>The canonical form: no whitespace; object members sorted by the UTF-16 code units of their
 * names; strings in UTF-8 with only {@code "}, {@code \} and the controls below U+0020 escaped
 * ({@code \b \t \n \f \r}, else <code>&#92;u00xx</code> in lowercase hex), everything else as is
 * (no Unicode normalisation); numbers as the IEEE-754 double they denote, written as ECMAScript's
 * {@code Number.prototype.toString} writes it (shortest round-trip digits; plain notation for
 * {@code 1e-7 <= |x| < 1e21}, else e.g. {@code 1e+21}; {@code -0} is {@code 0}); {@code true},
 * {@code false}, {@code null} as they are.
 *
 * <p>The input must be I-JSON (RFC 7493), else {@link InvalidJsonException}: well-formed UTF-8 JSON
 * (a leading byte order mark is ignored), no duplicate member names, no lone surrogates (raw or
 * <code>&#92;u</code> escaped), no number outside the double range (e.g. {@code 1e400}), and at
 * most {@link #MAX_DEPTH} nested arrays and objects. A number that underflows (e.g. {@code 1e-400})
 * is {@code 0}, as in ECMAScript.
 *
 * <p>Streaming: one pass, no tree, per-thread buffers (a buffer that grows past 256 KiB for one
 * huge input is released afterwards); in the steady state nothing is allocated but the result (and
 * a string for the rare number that needs floating point). Thread-safe.
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
