package dev.idem;

/**
 * Turns a work result into the bytes a store keeps for replay, and back.
 *
 * @param <T> the result type
 */
public interface ResultCodec<T> {
  /**
   * Encodes a result.
   *
   * @param value the result
   * @return its bytes
   */
  byte[] encode(T value);

  /**
   * Decodes a stored result.
   *
   * @param bytes what {@link #encode} returned
   * @return the result
   */
  T decode(byte[] bytes);
}
