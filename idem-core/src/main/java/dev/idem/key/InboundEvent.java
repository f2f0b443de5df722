package dev.idem.key;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link KeyRule} reads from an incoming event: its body, its headers and who sent it.
 * Sources (the HTTP ingress, Kafka, AMQP and NATS consumers) implement it over their own request or
 * record types without copying; {@link #of(byte[], Map)} and {@link #builder()} make one from plain
 * values.
 */
public interface InboundEvent {
  /**
   * Returns the raw body. Key rules never change it.
   *
   * @return the body bytes (not a copy), or null for an event without a body
   */
  byte @Nullable [] body();

  /**
   * Returns a header's value. Names are case-insensitive ({@code x-id} finds {@code X-Id}); where a
   * header is repeated, the first value.
   *
   * @param name the header name
   * @return the value, or null if the event has no such header
   */
  @Nullable String header(String name);

  /**
   * Returns who sent the event: the authenticated principal first, then each delegation actor, in
   * order (the principal's actor, that actor's actor, ...).
   *
   * @return the chain; empty for an anonymous event
   */
  List<Principal> principalChain();

  /**
   * Returns the body as already read by the source or pipeline (validated I-JSON in canonical
   * form), so key rules derive from it instead of reading {@link #body()} again; null if nobody
   * read it yet (the default). An implementation that returns one must return the read of exactly
   * {@link #body()}: the keys derived from either are then the same.
   *
   * @return the read body, or null
   */
  default @Nullable CanonicalBody canonicalBody() {
    return null;
  }

  /**
   * Returns an anonymous event with a body and headers.
   *
   * @param body the body (not copied: do not change it while the event is in use), or null
   * @param headers the headers (copied)
   * @return the event
   * @throws IllegalArgumentException if two header names differ only in case
   */
  static InboundEvent of(byte @Nullable [] body, Map<String, String> headers) {
    return builder().body(body).headers(headers).build();
  }

  /**
   * Returns a builder for an event, e.g. one with a principal chain.
   *
   * @return a new builder
   */
  static Builder builder() {
    return new Builder();
  }

  /** Builds an immutable {@link InboundEvent}. Not thread-safe; {@link #build()} copies. */
  final class Builder {
    private byte @Nullable [] body;
    private final TreeMap<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    private final List<Principal> chain = new ArrayList<>();

    private Builder() {}

    /**
     * Sets the body.
     *
     * @param body the body (not copied), or null for none
     * @return this builder
     */
    public Builder body(byte @Nullable [] body) {
      this.body = body;
      return this;
    }

    /**
     * Sets a header, replacing any value set under the same name in any case.
     *
     * @param name the name
     * @param value the value
     * @return this builder
     */
    public Builder header(String name, String value) {
      headers.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Adds headers.
     *
     * @param headers the headers
     * @return this builder
     * @throws IllegalArgumentException if two names differ only in case
     */
    public Builder headers(Map<String, String> headers) {
      TreeMap<String, String> seen = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      for (Map.Entry<String, String> e : headers.entrySet()) {
        String previous = seen.put(e.getKey(), e.getValue());
        if (previous != null) {
          throw new IllegalArgumentException(
              "headers "
                  + seen.ceilingKey(e.getKey())
                  + " and "
                  + e.getKey()
                  + " differ only in case; give each header once");
        }
      }
      seen.forEach(this::header);
      return this;
    }

    /**
     * Sets the principal: the first link of the chain.
     *
     * @param issuer who vouched for the caller
     * @param subject the caller
     * @return this builder
     */
    public Builder principal(String issuer, String subject) {
      Principal p = new Principal(issuer, subject);
      if (chain.isEmpty()) {
        chain.add(p);
      } else {
        chain.set(0, p);
      }
      return this;
    }

    /**
     * Appends a delegation actor after the principal and any earlier actors.
     *
     * @param issuer who vouched for the actor
     * @param subject the actor
     * @return this builder
     * @throws IllegalStateException if no principal was set
     */
    public Builder actor(String issuer, String subject) {
      if (chain.isEmpty()) {
        throw new IllegalStateException("set the principal before its actors");
      }
      chain.add(new Principal(issuer, subject));
      return this;
    }

    /**
     * Sets the whole principal chain.
     *
     * @param chain the principal, then each actor; empty for anonymous
     * @return this builder
     */
    public Builder principalChain(List<Principal> chain) {
      List<Principal> copy = List.copyOf(chain);
      this.chain.clear();
      this.chain.addAll(copy);
      return this;
    }

    /**
     * Builds the event.
     *
     * @return an immutable event
     */
    public InboundEvent build() {
      return new SimpleEvent(body, new TreeMap<>(headers), List.copyOf(chain));
    }
  }
}
