package dev.idem.server.signature;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How one webhook source verifies signatures ({@code source.webhook.signature} in YAML).
 *
 * <p>A request is accepted if its signature matches any one of the secrets. During a secret roll
 * list the new secret and the old one ({@code secrets: [new, old]}); once the provider signs with
 * the new one only, drop the old.
 *
 * @param scheme the provider's scheme
 * @param secrets the shared secrets as the provider shows them (Standard Webhooks: {@code
 *     whsec_<base64>}; the others: the raw secret string), at least one, at most {@link
 *     #MAX_SECRETS}
 * @param tolerance how far a signed timestamp may be from now (schemes with timestamps: Stripe,
 *     Standard Webhooks); older or newer is rejected as stale; at most {@link #MAX_TOLERANCE}
 */
public record SignatureSettings(SignatureScheme scheme, List<String> secrets, Duration tolerance) {

  /** The default tolerance: 5 minutes, as Stripe and Standard Webhooks recommend. */
  public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

  /**
   * The largest tolerance: 24 hours. Providers that sign a timestamp sign each retry anew, so a
   * longer tolerance would only widen the window for replays.
   */
  public static final Duration MAX_TOLERANCE = Duration.ofHours(24);

  /** The most secrets at once: a roll needs two; a few more cover overlapping rolls. */
  public static final int MAX_SECRETS = 4;

  private static final String STANDARD_PREFIX = "whsec_";

  /**
   * Validates the fields, including each secret's format for the scheme.
   *
   * @throws IdemConfigException if there is no secret, a secret is blank or not in the scheme's
   *     format, or the tolerance is not from 1 second to {@link #MAX_TOLERANCE}
   */
  public SignatureSettings {
    Objects.requireNonNull(scheme, "scheme");
    Objects.requireNonNull(tolerance, "tolerance");
    secrets = List.copyOf(Objects.requireNonNull(secrets, "secrets"));
    if (secrets.isEmpty()) {
      throw new IdemConfigException(
          "signature needs a secret; set the "
              + scheme.configName()
              + " signing secret (e.g. secret: ${WEBHOOK_SECRET})");
    }
    if (secrets.size() > MAX_SECRETS) {
      throw new IdemConfigException(
          "signature.secrets has "
              + secrets.size()
              + " entries; give at most "
              + MAX_SECRETS
              + " (during a roll: the new secret and the old one)");
    }
    for (String secret : secrets) {
      checkSecret(scheme, secret);
    }
    if (tolerance.compareTo(Duration.ofSeconds(1)) < 0 || tolerance.compareTo(MAX_TOLERANCE) > 0) {
      throw new IdemConfigException(
          "signature.tolerance must be from 1s to 24h (e.g. 5m), got " + tolerance);
    }
  }

  /**
   * Settings with one secret.
   *
   * @param scheme the provider's scheme
   * @param secret the shared secret as the provider shows it
   * @param tolerance how far a signed timestamp may be from now
   * @throws IdemConfigException as the canonical constructor
   */
  public SignatureSettings(SignatureScheme scheme, String secret, Duration tolerance) {
    this(scheme, List.of(Objects.requireNonNull(secret, "secret")), tolerance);
  }

  /**
   * Checks one secret against the scheme's format, without ever putting the secret into the
   * message.
   *
   * @param scheme the scheme
   * @param secret the secret as written in the config
   * @throws IdemConfigException if it is blank, or (Standard Webhooks) not {@code whsec_<base64>}
   */
  public static void checkSecret(SignatureScheme scheme, String secret) {
    Objects.requireNonNull(secret, "secret");
    if (secret.isBlank()) {
      throw new IdemConfigException(
          "the secret is empty; set the "
              + scheme.configName()
              + " signing secret (e.g. secret: ${WEBHOOK_SECRET})");
    }
    if (scheme == SignatureScheme.STANDARD) {
      standardKey(secret);
    }
  }

  /**
   * Decodes a Standard Webhooks secret: the base64 after {@code whsec_} (or the whole text, as the
   * specification's reference libraries accept).
   *
   * @throws IdemConfigException if it is not base64 or decodes to nothing
   */
  static byte[] standardKey(String secret) {
    String encoded =
        secret.startsWith(STANDARD_PREFIX) ? secret.substring(STANDARD_PREFIX.length()) : secret;
    byte[] key = SignatureSupport.decodeBase64(encoded.trim());
    if (key == null || key.length == 0) {
      throw new IdemConfigException(
          "a secret for scheme standard must be whsec_ followed by base64 (as the sender shows"
              + " it, e.g. whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw); the value given is not base64");
    }
    return key;
  }

  /** Hides the secrets. */
  @Override
  public String toString() {
    return "SignatureSettings[scheme="
        + scheme.configName()
        + ", secrets="
        + secrets.size()
        + "x***, tolerance="
        + tolerance
        + "]";
  }
}
