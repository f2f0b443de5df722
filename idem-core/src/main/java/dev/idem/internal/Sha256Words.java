package dev.idem.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** Conversions between a 32-byte SHA-256 digest and the four big-endian longs that hold it. */
public final class Sha256Words {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** One 8-byte load per word, where a loop of byte loads and shifts costs eight (every key). */
  private static final VarHandle BIG_LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  private Sha256Words() {}

  /**
   * Returns a new SHA-256 digest instance.
   *
   * @return a fresh {@link MessageDigest}
   */
  public static MessageDigest newDigest() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must provide SHA-256", e);
    }
  }

  /**
   * Reads the big-endian long at {@code offset}.
   *
   * @param bytes the bytes
   * @param offset where the 8 bytes start
   * @return the long
   */
  public static long word(byte[] bytes, int offset) {
    return (long) BIG_LONGS.get(bytes, offset);
  }

  /**
   * Writes four longs as 32 big-endian bytes.
   *
   * @param w0 bytes 0-7
   * @param w1 bytes 8-15
   * @param w2 bytes 16-23
   * @param w3 bytes 24-31
   * @return the 32 bytes
   */
  public static byte[] bytes(long w0, long w1, long w2, long w3) {
    byte[] out = new byte[32];
    put(out, 0, w0);
    put(out, 8, w1);
    put(out, 16, w2);
    put(out, 24, w3);
    return out;
  }

  private static void put(byte[] out, int offset, long v) {
    BIG_LONGS.set(out, offset, v);
  }

  /**
   * Formats four longs as 64 lowercase hex digits.
   *
   * @param w0 bytes 0-7
   * @param w1 bytes 8-15
   * @param w2 bytes 16-23
   * @param w3 bytes 24-31
   * @return the hex string
   */
  public static String hex(long w0, long w1, long w2, long w3) {
    char[] out = new char[64];
    long[] words = {w0, w1, w2, w3};
    for (int w = 0; w < 4; w++) {
      long v = words[w];
      for (int i = 15; i >= 0; i--) {
        out[w * 16 + i] = HEX[(int) (v & 0xF)];
        v >>>= 4;
      }
    }
    return new String(out);
  }

  /**
   * Parses 64 hex digits into 32 bytes.
   *
   * @param hex the digits, either case
   * @return the bytes
   * @throws IllegalArgumentException if the text is not 64 hex digits
   */
  public static byte[] parseHex(String hex) {
    if (hex.length() != 64) {
      throw new IllegalArgumentException(
          "a digest is 64 hex digits, got " + hex.length() + " characters");
    }
    byte[] out = new byte[32];
    for (int i = 0; i < 32; i++) {
      int hi = Character.digit(hex.charAt(2 * i), 16);
      int lo = Character.digit(hex.charAt(2 * i + 1), 16);
      if (hi < 0 || lo < 0) {
        throw new IllegalArgumentException("not a hex digit in digest '" + hex + "'");
      }
      out[i] = (byte) ((hi << 4) | lo);
    }
    return out;
  }
}
