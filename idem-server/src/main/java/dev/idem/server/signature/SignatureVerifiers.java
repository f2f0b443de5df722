package dev.idem.server.signature;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import java.util.Objects;

/**
 * Makes the {@link SignatureVerifier} of each {@link SignatureScheme}.
 *
 * <p>Every verifier computes HMAC-SHA256 over the raw body bytes exactly as received, compares in
 * constant time ({@link java.security.MessageDigest#isEqual}), accepts any one of several
 * signatures where the provider sends more than one and any one of the configured secrets (secret
 * rotation: {@code secrets: [new, old]}), and never puts a secret or an expected signature into an
 * exception message. Where the provider signs a timestamp (Stripe, Standard Webhooks) a correctly
 * signed request whose timestamp is more than the tolerance away from now, in either direction,
 * fails as {@link SignatureException.Reason#STALE}; a request that is not correctly signed fails as
 * {@link SignatureException.Reason#INVALID} whatever its timestamp. Verifiers are immutable and
 * thread-safe.
 */
public final class SignatureVerifiers {
  private SignatureVerifiers() {}

  /**
   * Makes the verifier for a webhook source.
   *
   * @param settings the scheme, secret and tolerance
   * @param time the clock signed timestamps are compared with
   * @return the scheme's verifier
   * @throws IdemConfigException if a secret is not in the scheme's format (Standard Webhooks:
   *     {@code whsec_<base64>}); {@link SignatureSettings} already checks this when it is made
   */
  public static SignatureVerifier create(SignatureSettings settings, TimeSource time) {
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(time, "time");
    return switch (settings.scheme()) {
      case STRIPE -> new StripeVerifier(settings, time);
      case GITHUB -> new GitHubVerifier(settings);
      case SHOPIFY -> new ShopifyVerifier(settings);
      case STANDARD -> new StandardWebhooksVerifier(settings, time);
    };
  }
}
