package dev.idem.server.signature;

import dev.idem.TimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Standard Webhooks (standardwebhooks.com, symmetric scheme): headers {@code webhook-id}, {@code
 * webhook-timestamp} (unix seconds) and {@code webhook-signature}, a space-separated list of {@code
 * v1,<base64>} entries, each the base64 HMAC-SHA256 of {@code id + "." + timestamp + "." + body}.
 * Any matching {@code v1} entry under any configured secret is accepted (secret rotation); other
 * versions (such as the asymmetric {@code v1a}) are ignored.
 *
 * <p>Svix, whose scheme this is, sends the same three headers as {@code svix-id}, {@code
 * svix-timestamp} and {@code svix-signature} by default. A request is read in one family: the
 * {@code webhook-*} headers if it has {@code webhook-id} or {@code webhook-signature}, otherwise
 * the {@code svix-*} headers if it has {@code svix-id} or {@code svix-signature}. The delivery id
 * comes from the same family, so one delivery always gets one key.
 *
 * <p>The secret is {@code whsec_<base64>}; the key is the base64-decoded part. A secret without the
 * prefix is base64-decoded too, as the specification's reference libraries do.
 */
final class StandardWebhooksVerifier implements SignatureVerifier {
  static final String ID_HEADER = "webhook-id";
  static final String TIMESTAMP_HEADER = "webhook-timestamp";
  static final String SIGNATURE_HEADER = "webhook-signature";
  private static final String SCHEME = "Standard Webhooks";

  /** One spelling of the three headers. */
  private record Family(String id, String timestamp, String signature) {}

  private static final Family STANDARD = new Family(ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER);
  private static final Family SVIX = new Family("svix-id", "svix-timestamp", "svix-signature");

  private final SigningKeys keys;
  private final Duration tolerance;
  private final TimeSource time;

  StandardWebhooksVerifier(SignatureSettings settings, TimeSource time) {
    List<byte[]> decoded = new ArrayList<>(settings.secrets().size());
    for (String secret : settings.secrets()) {
      decoded.add(SignatureSettings.standardKey(secret));
    }
    this.keys = SigningKeys.raw(decoded);
    this.tolerance = settings.tolerance();
    this.time = time;
  }

  private static Family family(Function<String, @Nullable String> headers) {
    if (SignatureSupport.optionalHeader(headers, ID_HEADER) != null
        || SignatureSupport.optionalHeader(headers, SIGNATURE_HEADER) != null) {
      return STANDARD;
    }
    if (SignatureSupport.optionalHeader(headers, SVIX.id()) != null
        || SignatureSupport.optionalHeader(headers, SVIX.signature()) != null) {
      return SVIX;
    }
    return STANDARD;
  }

  private static String require(
      Function<String, @Nullable String> headers, Family family, String name) {
    String value = SignatureSupport.optionalHeader(headers, name);
    if (value == null) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + name
              + " header is missing; "
              + SCHEME
              + " signs every delivery with "
              + family.id()
              + ", "
              + family.timestamp()
              + " and "
              + family.signature()
              + (family == STANDARD ? " (Svix: svix-id, svix-timestamp, svix-signature)" : ""));
    }
    return value;
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.STANDARD;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    Family family = family(headers);
    String id = require(headers, family, family.id());
    String timestamp = require(headers, family, family.timestamp());
    String header = require(headers, family, family.signature());
    if (id.indexOf('.') >= 0) {
      // The specification forbids '.' in the id: it would make "id.timestamp.body" ambiguous.
      throw new SignatureException(
          Reason.MISSING, "the " + family.id() + " header must not contain '.'");
    }
    long seconds = SignatureSupport.parseUnixSeconds(timestamp);
    if (seconds < 0) {
      throw new SignatureException(
          Reason.MISSING, "the " + family.timestamp() + " header is not unix seconds");
    }
    boolean sawV1 = false;
    List<byte[]> given = new ArrayList<>(2);
    for (String entry : header.split(" ")) {
      if (!entry.startsWith("v1,")) {
        continue; // another version, or extra spaces
      }
      sawV1 = true;
      byte[] decoded = SignatureSupport.decodeBase64(entry.substring(3));
      if (decoded != null) {
        given.add(decoded);
      }
    }
    if (!sawV1) {
      throw new SignatureException(
          Reason.MISSING,
          "the "
              + family.signature()
              + " header has no v1,<base64> entry (Idem checks the symmetric v1 scheme,"
              + " HMAC-SHA256)");
    }
    byte[] prefix = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
    if (!keys.matchesAny(prefix, rawBody, given)) {
      throw new SignatureException(
          Reason.INVALID,
          "no v1 signature in the "
              + family.signature()
              + " header matches; check that signature.secret is the endpoint's whsec_ secret"
              + " and that nothing rewrites the body on the way");
    }
    // Checked after the signature, so that STALE always means "authentic but too old or new".
    SignatureSupport.checkTolerance(seconds, time, tolerance, family.timestamp());
  }

  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    return Optional.ofNullable(SignatureSupport.optionalHeader(headers, family(headers).id()));
  }
}
