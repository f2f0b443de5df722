package dev.idem.server.signature;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.Objects;

/**
 * How one webhook source verifies signatures ({@code source.webhook.signature} in YAML).
 *
 * @param scheme the provider's scheme
 * @param secret the shared secret as the provider shows it (Standard Webhooks: {@code
 *     whsec_<base64>}; the others: the raw secret string)
 * @param tolerance how far a signed timestamp may be from now (schemes with timestamps: Stripe,
 *     Standard Webhooks); older or newer is rejected as stale
 */
public record SignatureSettings(SignatureScheme scheme, String secret, Duration tolerance) {

  /** The default tolerance: 5 minutes, as Stripe and Standard Webhooks recommend. */
  public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if the secret is blank or the tolerance not positive
   */
  public SignatureSettings {
    Objects.requireNonNull(scheme, "scheme");
    Objects.requireNonNull(secret, "secret");
    Objects.requireNonNull(tolerance, "tolerance");
    if (secret.isBlank()) {
      throw new IdemConfigException(
          "signature.secret is empty; set the "
              + scheme.configName()
              + " signing secret (e.g. secret: ${SHOP_SECRET})");
    }
    if (tolerance.isNegative() || tolerance.isZero()) {
      throw new IdemConfigException(
          "signature.tolerance must be positive (e.g. 5m), got " + tolerance);
    }
  }

  /** Hides the secret. */
  @Override
  public String toString() {
    return "SignatureSettings[scheme="
        + scheme.configName()
        + ", secret=***, tolerance="
        + tolerance
        + "]";
  }
}
