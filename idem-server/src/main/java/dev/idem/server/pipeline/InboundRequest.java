package dev.idem.server.pipeline;

import dev.idem.key.CanonicalBody;
import dev.idem.key.InboundEvent;
import dev.idem.key.Principal;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One event as a source received it: the raw body, a case-insensitive header lookup and the
 * authenticated caller's principal chain. It is the {@link InboundEvent} that key rules read.
 *
 * @param body the body exactly as received; callers must not modify it
 * @param headers returns a header's value by case-insensitive name, or null
 * @param principals the caller's principal chain (caller first, then each delegate, outermost
 *     first); empty when the source authenticates no caller (a verified signature proves the
 *     provider, whose delivery id is then the key)
 * @param source where the source got the event, for logs and dead letters (e.g. {@code topic},
 *     {@code partition}, {@code offset} for Kafka; {@code queue}, {@code redelivered} for AMQP);
 *     empty for a webhook
 * @param canonical the body as the pipeline read it (validated, canonical), so the key, the
 *     ordering key, the sequence and the fingerprint read it instead of the raw bytes; null before
 *     the pipeline read it (sources pass null)
 */
public record InboundRequest(
    byte[] body,
    Function<String, @Nullable String> headers,
    List<Principal> principals,
    Map<String, String> source,
    @Nullable CanonicalBody canonical)
    implements InboundEvent {

  /** Validates the fields and copies the chain and the source metadata. */
  public InboundRequest {
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(headers, "headers");
    principals = List.copyOf(principals);
    source = Map.copyOf(source);
  }

  /**
   * Makes an event as a source received it (not read yet).
   *
   * @param body the body exactly as received
   * @param headers returns a header's value by case-insensitive name, or null
   * @param principals the caller's principal chain
   * @param source where the source got the event
   */
  public InboundRequest(
      byte[] body,
      Function<String, @Nullable String> headers,
      List<Principal> principals,
      Map<String, String> source) {
    this(body, headers, principals, source, null);
  }

  /**
   * Makes an event with a caller's chain and no source metadata.
   *
   * @param body the body exactly as received
   * @param headers returns a header's value by case-insensitive name, or null
   * @param principals the caller's principal chain
   */
  public InboundRequest(
      byte[] body, Function<String, @Nullable String> headers, List<Principal> principals) {
    this(body, headers, principals, Map.of(), null);
  }

  /**
   * Makes an event with no authenticated caller.
   *
   * @param body the body exactly as received
   * @param headers returns a header's value by case-insensitive name, or null
   */
  public InboundRequest(byte[] body, Function<String, @Nullable String> headers) {
    this(body, headers, List.of(), Map.of(), null);
  }

  /**
   * Returns this event with the caller's principal chain.
   *
   * @param chain the chain
   * @return a new event
   */
  public InboundRequest withPrincipals(List<Principal> chain) {
    return new InboundRequest(body, headers, chain, source, canonical);
  }

  /**
   * Returns this event with another body (a signature check's unwrapped event).
   *
   * @param newBody the body
   * @return a new event
   */
  public InboundRequest withBody(byte[] newBody) {
    return new InboundRequest(newBody, headers, principals, source, null);
  }

  /**
   * Returns this event with its body as the pipeline read it.
   *
   * @param read the read of exactly {@link #body()}
   * @return a new event
   */
  public InboundRequest withCanonical(CanonicalBody read) {
    return new InboundRequest(body, headers, principals, source, read);
  }

  /**
   * Returns the body as the pipeline read it, or null before it was read.
   *
   * @return the read body, or null
   */
  @Override
  public @Nullable CanonicalBody canonicalBody() {
    return canonical;
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
   * Returns the caller's principal chain, empty without caller authentication.
   *
   * @return the chain
   */
  @Override
  public List<Principal> principalChain() {
    return principals;
  }
}
