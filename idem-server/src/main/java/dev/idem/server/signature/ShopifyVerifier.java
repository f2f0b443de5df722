package dev.idem.server.signature;

import dev.idem.server.signature.SignatureException.Reason;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Shopify: {@code X-Shopify-Hmac-Sha256: <base64>}, the base64 HMAC-SHA256 of the raw body keyed
 * with the app's client secret (UTF-8). The same headers without the {@code X-} prefix ({@code
 * shopify-hmac-sha256}, {@code shopify-webhook-id}), which Shopify's own libraries accept, are read
 * when the prefixed ones are absent.
 *
 * <p>No timestamp is checked. Shopify signs none: {@code X-Shopify-Triggered-At} is outside the
 * signature, so anyone replaying a request can rewrite it, and checking it would stop no attacker.
 * It would also reject Shopify's own retries, which resend the original delivery (with its original
 * trigger time) for up to 4 hours. Replays are stopped by deduplicating on {@code
 * X-Shopify-Webhook-Id}, which stays the same across Shopify's retries of one delivery.
 */
final class ShopifyVerifier implements SignatureVerifier {
  static final String HEADER = "X-Shopify-Hmac-Sha256";
  static final String HEADER_UNPREFIXED = "Shopify-Hmac-Sha256";
  static final String DELIVERY_HEADER = "X-Shopify-Webhook-Id";
  static final String DELIVERY_HEADER_UNPREFIXED = "Shopify-Webhook-Id";

  private final SigningKeys keys;

  ShopifyVerifier(SignatureSettings settings) {
    this.keys = SigningKeys.utf8(settings.secrets());
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.SHOPIFY;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    String header = SignatureSupport.requireHeader(headers, "Shopify", HEADER, HEADER_UNPREFIXED);
    byte[] given = SignatureSupport.decodeBase64(header);
    if (given == null || given.length != 32) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + HEADER
              + " header is malformed: Shopify sends the base64 of a 32-byte HMAC-SHA256");
    }
    if (!keys.matchesAny(null, rawBody, List.of(given))) {
      throw new SignatureException(
          Reason.INVALID,
          "the "
              + HEADER
              + " signature does not match the body; check that signature.secret is the app's"
              + " client secret and that nothing rewrites the body on the way");
    }
  }

  /**
   * Returns {@code X-Shopify-Webhook-Id} (or {@code shopify-webhook-id}) only. {@code
   * X-Shopify-Event-Id} is not a fallback: it is shared by every subscription's delivery of one
   * event, so mixing the two would give one delivery different keys depending on which header came.
   * Pipelines that want one delivery per event across subscriptions set {@code dedup.key:
   * header("X-Shopify-Event-Id")}.
   */
  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    String id = SignatureSupport.optionalHeader(headers, DELIVERY_HEADER);
    if (id == null) {
      id = SignatureSupport.optionalHeader(headers, DELIVERY_HEADER_UNPREFIXED);
    }
    return Optional.ofNullable(id);
  }
}
