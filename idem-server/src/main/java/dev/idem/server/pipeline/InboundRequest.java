package dev.idem.server.pipeline;

import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One event as a source received it: the raw body and a case-insensitive header lookup.
 *
 * @param body the body exactly as received; callers must not modify it
 * @param headers returns a header's value by case-insensitive name, or null
 */
public record InboundRequest(byte[] body, Function<String, @Nullable String> headers) {

  /** Validates the fields. */
  public InboundRequest {
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(headers, "headers");
  }

  /**
   * Returns a header's value.
   *
   * @param name the header name, any case
   * @return the value, or null if absent
   */
  public @Nullable String header(String name) {
    return headers.apply(name);
  }
}
