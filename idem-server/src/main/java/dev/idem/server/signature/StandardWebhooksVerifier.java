package dev.idem.server.signature;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Standard Webhooks (standardwebhooks.com, symmetric scheme): headers {@code webhook-id}, {@code
 * webhook-timestamp} (unix seconds) and {@code webhook-signature}, a space-separated list of {@code
 * v1,<base64>} entries, each the base64 HMAC-SHA256 of {@code id + "." + timestamp + "." + body}.
 * Any matching {@code v1} entry is accepted (secret rotation); other versions (such as the
 * asymmetric {@code v1a}) are ignored.
 *
 * <p>The secret is {@code whsec_<base64>}; the key is the base64-decoded part. A secret without the
 * prefix is base64-decoded too, as the specification's reference libraries do.
 */
final class StandardWebhooksVerifier implements SignatureVerifier {
  static final String ID_HEADER = "webhook-id";
  static final String TIMESTAMP_HEADER = "webhook-timestamp";
  static final String SIGNATURE_HEADER = "webhook-signature";
  private static final String SECRET_PREFIX = "whsec_";
  private static final String SCHEME = "Standard Webhooks";

  private final HmacSha256 hmac;
  private final Duration tolerance;
  private final TimeSource time;

  StandardWebhooksVerifier(SignatureSettings settings, TimeSource time) {
    this.hmac = new HmacSha256(decodeSecret(settings.secret()));
    this.tolerance = settings.tolerance();
    this.time = time;
  }

  private static byte[] decodeSecret(String secret) {
    String encoded =
        secret.startsWith(SECRET_PREFIX) ? secret.substring(SECRET_PREFIX.length()) : secret;
    byte[] key = SignatureSupport.decodeBase64(encoded.trim());
    if (key == null || key.length == 0) {
      throw new IdemConfigException(
          "signature.secret for scheme standard must be whsec_ followed by base64 (as the sender"
              + " shows it, e.g. whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw); the value given is not"
              + " base64");
    }
    return key;
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.STANDARD;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    String id = SignatureSupport.requireHeader(headers, ID_HEADER, SCHEME);
    String timestamp = SignatureSupport.requireHeader(headers, TIMESTAMP_HEADER, SCHEME);
    String header = SignatureSupport.requireHeader(headers, SIGNATURE_HEADER, SCHEME);
    if (id.indexOf('.') >= 0) {
      // The specification forbids '.' in the id: it would make "id.timestamp.body" ambiguous.
      throw new SignatureException(
          Reason.MISSING, "the " + ID_HEADER + " header must not contain '.'");
    }
    long seconds = SignatureSupport.parseUnixSeconds(timestamp);
    if (seconds < 0) {
      throw new SignatureException(
          Reason.MISSING, "the " + TIMESTAMP_HEADER + " header is not unix seconds");
    }
    byte[] expected = null;
    boolean sawV1 = false;
    boolean matched = false;
    for (String entry : header.split(" ")) {
      if (!entry.startsWith("v1,")) {
        continue; // another version, or extra spaces
      }
      sawV1 = true;
      if (expected == null) {
        byte[] prefix = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
        expected = hmac.mac(prefix, rawBody);
      }
      byte[] given = SignatureSupport.decodeBase64(entry.substring(3));
      matched |= given != null && MessageDigest.isEqual(expected, given);
    }
    if (!sawV1) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + SIGNATURE_HEADER
              + " header has no v1,<base64> entry (Idem checks the symmetric v1 scheme,"
              + " HMAC-SHA256)");
    }
    if (!matched) {
      throw new SignatureException(
          Reason.INVALID,
          "no v1 signature in the "
              + SIGNATURE_HEADER
              + " header matches; check that signature.secret is the endpoint's whsec_ secret"
              + " and that nothing rewrites the body on the way");
    }
    // Checked after the signature, so that STALE always means "authentic but too old or new".
    SignatureSupport.checkTolerance(seconds, time, tolerance, TIMESTAMP_HEADER);
  }

  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    return Optional.ofNullable(SignatureSupport.optionalHeader(headers, ID_HEADER));
  }
}
