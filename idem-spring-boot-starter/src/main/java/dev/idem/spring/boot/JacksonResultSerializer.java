package dev.idem.spring.boot;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.reflect.Type;
import org.jspecify.annotations.Nullable;

/** The default {@link ResultSerializer}: JSON through a Jackson 2 {@link ObjectMapper}. */
public final class JacksonResultSerializer implements ResultSerializer {
  private final ObjectMapper mapper;

  /**
   * Creates a serializer.
   *
   * @param mapper the mapper (its modules decide which types work)
   */
  public JacksonResultSerializer(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  @Override
  public byte[] encode(@Nullable Object value, Type type) {
    try {
      return mapper.writerFor(mapper.constructType(type)).writeValueAsBytes(value);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot store the result of type " + type.getTypeName() + " as JSON: " + e.getMessage(),
          e);
    }
  }

  @Override
  public @Nullable Object decode(byte[] bytes, Type type) {
    try {
      return mapper.readerFor(mapper.constructType(type)).readValue(bytes);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "the stored result does not read back as " + type.getTypeName() + ": " + e.getMessage(),
          e);
    }
  }
}
