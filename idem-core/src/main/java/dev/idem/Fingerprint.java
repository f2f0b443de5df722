package dev.idem;

import dev.idem.internal.Sha256Words;

/**
 * A 32-byte SHA-256 digest of a request's payload, stored with a key in idempotency-key mode: the
 * same key with a different fingerprint is a {@link Decision.Conflict}, not a duplicate.
 *
 * <p>Immutable; {@code equals} compares the digest.
 */
public final class Fingerprint {
  private final long w0;
  private final long w1;
  private final long w2;
  private final long w3;

  private Fingerprint(long w0, long w1, long w2, long w3) {
    this.w0 = w0;
    this.w1 = w1;
    this.w2 = w2;
    this.w3 = w3;
  }

  /**
   * Returns the SHA-256 fingerprint of raw payload bytes. For JSON payloads whose member order or
   * number spelling may vary between resends, use {@link
   * dev.idem.key.CanonicalJson#fingerprint(byte[])}: it hashes the canonical form, in which numbers
   * keep their exact decimal value ({@code 1.0} is {@code 1}, but 820982911946154508 and
   * 820982911946154509 differ) and values keep their JSON type.
   *
   * @param payload the payload
   * @return its fingerprint
   */
  public static Fingerprint sha256(byte[] payload) {
    return ofDigest(Sha256Words.newDigest().digest(payload));
  }

  /**
   * Wraps a 32-byte digest.
   *
   * @param digest exactly 32 bytes; copied
   * @return the fingerprint
   * @throws IllegalArgumentException if the array is not 32 bytes long
   */
  public static Fingerprint ofDigest(byte[] digest) {
    if (digest.length != 32) {
      throw new IllegalArgumentException(
          "a Fingerprint is a 32-byte SHA-256 digest, got " + digest.length + " bytes");
    }
    return new Fingerprint(
        Sha256Words.word(digest, 0),
        Sha256Words.word(digest, 8),
        Sha256Words.word(digest, 16),
        Sha256Words.word(digest, 24));
  }

  /**
   * Parses the 64 hex digits that {@link #toHex()} prints.
   *
   * @param hex 64 hex digits
   * @return the fingerprint
   */
  public static Fingerprint parseHex(String hex) {
    return ofDigest(Sha256Words.parseHex(hex));
  }

  /**
   * Returns a new copy of the 32-byte digest.
   *
   * @return the digest bytes
   */
  public byte[] toBytes() {
    return Sha256Words.bytes(w0, w1, w2, w3);
  }

  /**
   * Returns the digest as 64 lowercase hex digits.
   *
   * @return the hex digits
   */
  public String toHex() {
    return Sha256Words.hex(w0, w1, w2, w3);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Fingerprint f && f.w0 == w0 && f.w1 == w1 && f.w2 == w2 && f.w3 == w3;
  }

  @Override
  public int hashCode() {
    return (int) (w0 ^ (w0 >>> 32));
  }

  /** Returns {@code fingerprint:} followed by the hex digest. */
  @Override
  public String toString() {
    return "fingerprint:" + toHex();
  }
}
