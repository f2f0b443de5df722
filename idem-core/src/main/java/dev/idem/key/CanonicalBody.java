package dev.idem.key;

import dev.idem.Fingerprint;
import java.security.DigestException;
import java.security.MessageDigest;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * A JSON body read once: validated as I-JSON and held in its {@link CanonicalJson} form, so every
 * reader of the event that needs the body (the default key, field keys, an ordering key, a sequence
 * field, a payload fingerprint) reads this result instead of parsing the body again. An {@link
 * InboundEvent} hands it to the key rules through {@link InboundEvent#canonicalBody()}.
 *
 * <p>The canonical form and its SHA-256 are exactly what {@link CanonicalJson#canonicalize(byte[])}
 * and {@link CanonicalJson#sha256(byte[])} give for the same body, so keys derived from it are the
 * keys derived from the raw body (keys are persisted; they never change with the way the body was
 * read).
 *
 * <p>Besides the canonical form, the read records two facts a caller with stricter limits than this
 * reader's can use to decide whether to look closer: the longest member name and the widest number
 * ({@link #longestName()}, {@link #numberReach()}).
 *
 * <p>Immutable once read; the digest is computed on first use and then shared (a benign race: two
 * threads compute the same bytes). Thread-safe.
 */
public final class CanonicalBody {
  private final byte[] canonical;
  private final int longestName;
  private final int numberReach;
  private byte @Nullable [] sha256;

  private CanonicalBody(byte[] canonical, int longestName, int numberReach) {
    this.canonical = canonical;
    this.longestName = longestName;
    this.numberReach = numberReach;
  }

  /**
   * Reads a body: validates it as I-JSON with at most {@code maxDepth} nested arrays and objects
   * and puts it in canonical form, in one streaming pass.
   *
   * @param json the UTF-8 JSON body; not changed, and not retained unless it is already canonical
   * @param maxDepth the deepest nesting accepted, from 1 to {@link CanonicalJson#MAX_DEPTH}
   * @return the read body
   * @throws InvalidJsonException if the body is not I-JSON or nested deeper than {@code maxDepth}
   * @throws NumberOutOfRangeException if a number is outside the exact range
   * @throws IllegalArgumentException if {@code maxDepth} is out of range
   */
  public static CanonicalBody read(byte[] json, int maxDepth) {
    if (maxDepth < 1 || maxDepth > CanonicalJson.MAX_DEPTH) {
      throw new IllegalArgumentException(
          "maxDepth must be from 1 to " + CanonicalJson.MAX_DEPTH + ", not " + maxDepth);
    }
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.canonicalize(json, 0, json.length, maxDepth);
      // Compact, sorted JSON is its own canonical form: then share the body, no copy.
      byte[] canonical =
          c.outLen == json.length && Arrays.equals(c.out, 0, c.outLen, json, 0, json.length)
              ? json
              : Arrays.copyOf(c.out, c.outLen);
      return new CanonicalBody(canonical, c.longestName, c.numberReach);
    } finally {
      c.trim();
    }
  }

  /**
   * Reads a body with the default nesting limit ({@link CanonicalJson#MAX_DEPTH}).
   *
   * @param json the UTF-8 JSON body
   * @return the read body
   * @throws InvalidJsonException if the body is not I-JSON
   */
  public static CanonicalBody read(byte[] json) {
    return read(json, CanonicalJson.MAX_DEPTH);
  }

  /** The canonical bytes; never changed, never handed out. */
  byte[] bytes() {
    return canonical;
  }

  /**
   * Returns the length of the canonical form in bytes.
   *
   * @return the length
   */
  public int length() {
    return canonical.length;
  }

  /**
   * Returns a copy of the canonical form.
   *
   * @return the canonical UTF-8 bytes (a new array)
   */
  public byte[] toBytes() {
    return canonical.clone();
  }

  /**
   * Returns the length in canonical bytes, quotes included, of the longest member name of any
   * object in the body (0 if it has no member): an upper bound of the name's length in characters
   * plus 2.
   *
   * @return the length
   */
  public int longestName() {
    return longestName;
  }

  /**
   * Returns, over every number of the body, the largest sum of the number's text length (as written
   * in the body) and the magnitude of its written exponent; 0 if the body has no number. A number's
   * decimal exponent and its length are both at most this, so a body whose reach is small has no
   * number near the edges of any floating-point range and none with a long text.
   *
   * @return the reach
   */
  public int numberReach() {
    return numberReach;
  }

  /** The digest, computed once; callers copy it out or hash it in. */
  byte[] digest() {
    byte[] d = sha256;
    if (d == null) {
      MessageDigest sha = JsonCanonicalizer.get().sha();
      sha.update(canonical, 0, canonical.length);
      d = new byte[32];
      try {
        sha.digest(d, 0, 32);
      } catch (DigestException e) {
        throw new IllegalStateException("SHA-256 digest needs 32 bytes", e);
      }
      sha256 = d;
    }
    return d;
  }

  /**
   * Returns SHA-256 of the canonical form: the same bytes as {@link CanonicalJson#sha256(byte[])}
   * of the body.
   *
   * @return the 32-byte digest (a new array)
   */
  public byte[] sha256() {
    return digest().clone();
  }

  /**
   * Returns the body's payload fingerprint: the same as {@link CanonicalJson#fingerprint(byte[])}
   * of the body.
   *
   * @return the fingerprint
   */
  public Fingerprint fingerprint() {
    return Fingerprint.ofDigest(digest());
  }
}
