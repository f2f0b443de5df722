package dev.idem.server.signature;

import dev.idem.server.signature.SignatureException.Reason;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Shopify: {@code X-Shopify-Hmac-Sha256: <base64>}, the base64 HMAC-SHA256 of the raw body keyed
 * with the app's client secret (UTF-8).
 *
 * <p>No timestamp is checked. Shopify signs none: {@code X-Shopify-Triggered-At} is outside the
 * signature, so anyone replaying a request can rewrite it, and checking it would stop no attacker.
 * It would also reject Shopify's own retries, which resend the original delivery (with its original
 * trigger time) for up to 4 hours. Replays are stopped by deduplicating on {@code
 * X-Shopify-Webhook-Id}, which stays the same across Shopify's retries of one delivery.
 */
final class ShopifyVerifier implements SignatureVerifier {
  static final String HEADER = "X-Shopify-Hmac-Sha256";
  static final String DELIVERY_HEADER = "X-Shopify-Webhook-Id";

  private final HmacSha256 hmac;

  ShopifyVerifier(SignatureSettings settings) {
    this.hmac = new HmacSha256(settings.secret().getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.SHOPIFY;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    String header = SignatureSupport.requireHeader(headers, HEADER, "Shopify");
    byte[] given = SignatureSupport.decodeBase64(header);
    if (given == null || given.length != 32) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + HEADER
              + " header is malformed: Shopify sends the base64 of a 32-byte HMAC-SHA256");
    }
    if (!MessageDigest.isEqual(hmac.mac(null, rawBody), given)) {
      throw new SignatureException(
          Reason.INVALID,
          "the "
              + HEADER
              + " signature does not match the body; check that signature.secret is the app's"
              + " client secret and that nothing rewrites the body on the way");
    }
  }

  /**
   * Returns {@code X-Shopify-Webhook-Id} only. {@code X-Shopify-Event-Id} is not a fallback: it is
   * shared by every subscription's delivery of one event, so mixing the two would give one delivery
   * different keys depending on which header came. Pipelines that want one delivery per event
   * across subscriptions set {@code dedup.key: header("X-Shopify-Event-Id")}.
   */
  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    return Optional.ofNullable(SignatureSupport.optionalHeader(headers, DELIVERY_HEADER));
  }
}
