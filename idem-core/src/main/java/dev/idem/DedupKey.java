package dev.idem;

import dev.idem.internal.Sha256Words;

/**
 * The identity of one piece of work inside a {@link Scope}: a 32-byte SHA-256 digest of the key
 * material, never the material itself. Stores keep only these 32 bytes (as four longs in memory).
 *
 * <p>Make keys with {@link dev.idem.key.KeyEncoding} (from strings or typed parts) or a {@link
 * dev.idem.key.KeyRule} (from an event). {@link #ofDigest(byte[])} takes a digest computed
 * elsewhere, e.g. read back from a store.
 *
 * <p>Immutable; {@code equals} and {@code hashCode} compare the digest.
 */
public final class DedupKey {
  private final long w0;
  private final long w1;
  private final long w2;
  private final long w3;

  private DedupKey(long w0, long w1, long w2, long w3) {
    this.w0 = w0;
    this.w1 = w1;
    this.w2 = w2;
    this.w3 = w3;
  }

  /**
   * Wraps a 32-byte digest.
   *
   * @param digest exactly 32 bytes; not kept (copied into four longs)
   * @return the key
   * @throws IllegalArgumentException if the array is not 32 bytes long
   */
  public static DedupKey ofDigest(byte[] digest) {
    if (digest.length != 32) {
      throw new IllegalArgumentException(
          "a DedupKey is a 32-byte SHA-256 digest, got " + digest.length + " bytes");
    }
    return new DedupKey(
        Sha256Words.word(digest, 0),
        Sha256Words.word(digest, 8),
        Sha256Words.word(digest, 16),
        Sha256Words.word(digest, 24));
  }

  /**
   * Makes a key from its four big-endian words (for stores that keep keys as longs). The words must
   * be uniformly distributed, as digest words are: {@link #hashCode()} uses only word 0, so made-up
   * keys with a constant first word all collide in hash tables.
   *
   * @param w0 bytes 0-7
   * @param w1 bytes 8-15
   * @param w2 bytes 16-23
   * @param w3 bytes 24-31
   * @return the key
   */
  public static DedupKey ofWords(long w0, long w1, long w2, long w3) {
    return new DedupKey(w0, w1, w2, w3);
  }

  /**
   * Parses the 64 hex digits that {@link #toHex()} prints.
   *
   * @param hex 64 hex digits
   * @return the key
   * @throws IllegalArgumentException if the text is not 64 hex digits
   */
  public static DedupKey parseHex(String hex) {
    return ofDigest(Sha256Words.parseHex(hex));
  }

  /**
   * Returns word {@code i} (0 to 3) of the digest, big-endian.
   *
   * @param i the word index, 0 to 3
   * @return the word
   */
  public long word(int i) {
    return switch (i) {
      case 0 -> w0;
      case 1 -> w1;
      case 2 -> w2;
      case 3 -> w3;
      default -> throw new IndexOutOfBoundsException("word index " + i + " is not in 0..3");
    };
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
   * Returns the digest as 64 lowercase hex digits (the form stores use in text keys).
   *
   * @return the hex digits
   */
  public String toHex() {
    return Sha256Words.hex(w0, w1, w2, w3);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DedupKey k && k.w0 == w0 && k.w1 == w1 && k.w2 == w2 && k.w3 == w3;
  }

  @Override
  public int hashCode() {
    // The digest is uniformly distributed: any word is a good hash.
    return (int) (w0 ^ (w0 >>> 32));
  }

  /** Returns {@code key:} followed by the hex digest. */
  @Override
  public String toString() {
    return "key:" + toHex();
  }
}
