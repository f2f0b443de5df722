package dev.idem.spring.boot;

import java.lang.reflect.Type;
import org.jspecify.annotations.Nullable;

/**
 * Turns an {@link Idempotent} method's return value into the bytes stored with its key, and back.
 * The default writes JSON with Jackson; declare a bean of this type to replace it.
 */
public interface ResultSerializer {

  /**
   * Encodes a return value.
   *
   * @param value the value (may be null)
   * @param type the method's generic return type
   * @return the bytes to store
   * @throws IllegalArgumentException if the value cannot be encoded (the key is then released)
   */
  byte[] encode(@Nullable Object value, Type type);

  /**
   * Decodes a stored return value.
   *
   * @param bytes the stored bytes
   * @param type the method's generic return type
   * @return the value
   * @throws IllegalArgumentException if the bytes do not decode to the type
   */
  @Nullable Object decode(byte[] bytes, Type type);
}
