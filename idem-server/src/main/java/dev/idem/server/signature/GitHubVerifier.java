package dev.idem.server.signature;

import dev.idem.server.signature.SignatureException.Reason;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * GitHub: {@code X-Hub-Signature-256: sha256=<hex>}, the hex HMAC-SHA256 of the raw body keyed with
 * the webhook's secret (UTF-8). GitHub signs no timestamp, so there is no tolerance to check;
 * replays are stopped by deduplicating on {@code X-GitHub-Delivery}.
 */
final class GitHubVerifier implements SignatureVerifier {
  static final String HEADER = "X-Hub-Signature-256";
  static final String DELIVERY_HEADER = "X-GitHub-Delivery";
  private static final String PREFIX = "sha256=";

  private final HmacSha256 hmac;

  GitHubVerifier(SignatureSettings settings) {
    this.hmac = new HmacSha256(settings.secret().getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.GITHUB;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    String header = SignatureSupport.requireHeader(headers, HEADER, "GitHub");
    if (!header.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + HEADER
              + " header is malformed: GitHub sends sha256=<hex signature>"
              + " (X-Hub-Signature, the SHA-1 form, is not accepted)");
    }
    byte[] given = SignatureSupport.decodeHex(header.substring(PREFIX.length()), 32);
    if (given == null) {
      throw new SignatureException(
          Reason.MISSING,
          "the " + HEADER + " header is malformed: after sha256= it must have 64 hex digits");
    }
    if (!MessageDigest.isEqual(hmac.mac(null, rawBody), given)) {
      throw new SignatureException(
          Reason.INVALID,
          "the "
              + HEADER
              + " signature does not match the body; check that signature.secret is the"
              + " webhook's secret and that nothing rewrites the body on the way");
    }
  }

  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    return Optional.ofNullable(SignatureSupport.optionalHeader(headers, DELIVERY_HEADER));
  }
}
