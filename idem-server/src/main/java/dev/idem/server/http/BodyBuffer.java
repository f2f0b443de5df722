package dev.idem.server.http;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A request body as it arrives: the array grows with the bytes received (doubling from a small
 * start), never to the declared {@code Content-Length} up front, so a client that declares a large
 * body and sends little costs little memory. Not thread-safe; one reader appends.
 */
final class BodyBuffer {
  /** The first allocation, whatever the declared length. */
  static final int INITIAL_CAPACITY = 4096;

  private final long limit;
  private byte[] bytes;
  private int size;

  /**
   * Creates an empty buffer.
   *
   * @param declared the declared {@code Content-Length}, or -1 if unknown (chunked)
   * @param max the most bytes accepted
   */
  BodyBuffer(long declared, long max) {
    this.limit = declared >= 0 ? Math.min(declared, max) : max;
    this.bytes = new byte[(int) Math.min(limit, INITIAL_CAPACITY)];
  }

  /**
   * Appends the remaining bytes of a buffer.
   *
   * @param in the bytes; consumed
   * @return false (and nothing appended) if the body would pass the limit
   */
  boolean append(ByteBuffer in) {
    int length = in.remaining();
    if (size + (long) length > limit) {
      return false;
    }
    if (size + length > bytes.length) {
      long grown = Math.max((long) size + length, 2L * bytes.length);
      bytes = Arrays.copyOf(bytes, (int) Math.min(grown, limit));
    }
    in.get(bytes, size, length);
    size += length;
    return true;
  }

  /** Returns how many bytes arrived. */
  int size() {
    return size;
  }

  /** Returns the bytes allocated now, for tests of the growth. */
  int capacity() {
    return bytes.length;
  }

  /** Returns the body, trimmed to what arrived. */
  byte[] toByteArray() {
    return size == bytes.length ? bytes : Arrays.copyOf(bytes, size);
  }
}
