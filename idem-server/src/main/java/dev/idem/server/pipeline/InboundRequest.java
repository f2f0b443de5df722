package dev.idem.server.pipeline;

import dev.idem.key.InboundEvent;
import dev.idem.key.Principal;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One event as a source received it: the raw body and a case-insensitive header lookup. It is the
 * {@link InboundEvent} that key rules read; a webhook has no authenticated caller, so its principal
 * chain is empty.
 *
 * @param body the body exactly as received; callers must not modify it
 * @param headers returns a header's value by case-insensitive name, or null
 */
public record InboundRequest(byte[] body, Function<String, @Nullable String> headers)
    implements InboundEvent {

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
  @Override
  public @Nullable String header(String name) {
    return headers.apply(name);
  }

  /**
   * Returns the empty chain: a webhook's sender is not authenticated as a principal (a verified
   * signature proves the provider, whose delivery id is then the key).
   *
   * @return an empty list
   */
  @Override
  public List<Principal> principalChain() {
    return List.of();
  }
}
