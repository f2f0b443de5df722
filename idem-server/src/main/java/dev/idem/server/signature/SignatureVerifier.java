package dev.idem.server.signature;

import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Verifies one provider's webhook signatures. Create one with {@code
 * SignatureVerifiers.create(SignatureSettings, TimeSource)}. Thread-safe.
 *
 * <p>Headers are read through a case-insensitive lookup: {@code headers.apply(name)} returns the
 * header's value or null.
 */
public interface SignatureVerifier {

  /**
   * Returns the scheme this verifier checks.
   *
   * @return the scheme
   */
  SignatureScheme scheme();

  /**
   * Verifies the signature over the raw body, in constant time.
   *
   * @param rawBody the body exactly as received
   * @param headers case-insensitive header lookup
   * @throws SignatureException if the signature is missing, wrong or stale
   */
  void verify(byte[] rawBody, Function<String, @Nullable String> headers);

  /**
   * Verifies the signature over the raw body, then returns the event's body: what keys, transforms
   * and delivery read. That is the raw body itself, except where the provider wraps the event
   * (GitHub's {@code application/x-www-form-urlencoded} deliveries, {@code payload=<json>}: the
   * JSON in {@code payload}).
   *
   * @param rawBody the body exactly as received
   * @param headers case-insensitive header lookup
   * @return the event's body
   * @throws SignatureException if the signature is missing, wrong or stale, or the signed body does
   *     not hold the event where the provider puts it
   */
  default byte[] verifiedBody(byte[] rawBody, Function<String, @Nullable String> headers) {
    verify(rawBody, headers);
    return rawBody;
  }

  /**
   * Returns the provider's delivery id, the default key of a signed webhook: Stripe's event {@code
   * id} (body), {@code X-GitHub-Delivery}, {@code X-Shopify-Webhook-Id}, or {@code webhook-id}.
   *
   * @param rawBody the body exactly as received
   * @param headers case-insensitive header lookup
   * @return the delivery id, or empty if the request has none
   */
  Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers);
}
