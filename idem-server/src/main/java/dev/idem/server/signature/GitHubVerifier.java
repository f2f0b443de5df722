package dev.idem.server.signature;

import dev.idem.server.signature.SignatureException.Reason;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * GitHub: {@code X-Hub-Signature-256: sha256=<hex>}, the hex HMAC-SHA256 of the raw body keyed with
 * the webhook's secret (UTF-8). GitHub signs no timestamp, so there is no tolerance to check;
 * replays are stopped by deduplicating on {@code X-GitHub-Delivery}.
 *
 * <p>A webhook whose content type is set to {@code application/x-www-form-urlencoded} in GitHub
 * sends {@code payload=<url-encoded json>}. The signature covers that raw form body; once it is
 * verified, the event's body is the JSON in {@code payload} ({@link #verifiedBody}).
 */
final class GitHubVerifier implements SignatureVerifier {
  static final String HEADER = "X-Hub-Signature-256";
  static final String DELIVERY_HEADER = "X-GitHub-Delivery";
  static final String FORM_TYPE = "application/x-www-form-urlencoded";
  private static final String PREFIX = "sha256=";
  private static final byte[] PAYLOAD = "payload".getBytes(StandardCharsets.US_ASCII);

  private final SigningKeys keys;

  GitHubVerifier(SignatureSettings settings) {
    this.keys = SigningKeys.utf8(settings.secrets());
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
    if (!keys.matchesAny(null, rawBody, List.of(given))) {
      throw new SignatureException(
          Reason.INVALID,
          "the "
              + HEADER
              + " signature does not match the body; check that signature.secret is the"
              + " webhook's secret and that nothing rewrites the body on the way");
    }
  }

  /**
   * Verifies over the raw body; for a form delivery ({@code Content-Type:
   * application/x-www-form-urlencoded}) returns the bytes of its one {@code payload} field,
   * percent-decoded, and otherwise the raw body.
   *
   * @throws SignatureException MISSING if a form delivery has no {@code payload} field, has it more
   *     than once, or its encoding is broken
   */
  @Override
  public byte[] verifiedBody(byte[] rawBody, Function<String, @Nullable String> headers) {
    verify(rawBody, headers);
    return isForm(headers.apply("Content-Type")) ? payload(rawBody) : rawBody;
  }

  static boolean isForm(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int semicolon = contentType.indexOf(';');
    String type = semicolon < 0 ? contentType : contentType.substring(0, semicolon);
    return type.trim().toLowerCase(Locale.ROOT).equals(FORM_TYPE);
  }

  /** The decoded value of the form's one {@code payload} field. */
  private static byte[] payload(byte[] form) {
    byte[] found = null;
    int start = 0;
    while (start <= form.length) {
      int end = indexOf(form, (byte) '&', start);
      int eq = indexOf(form, (byte) '=', start);
      if (eq > end) {
        eq = -1;
      }
      int nameEnd = eq < 0 ? end : eq;
      if (Arrays.equals(decode(form, start, nameEnd), PAYLOAD)) {
        if (found != null) {
          throw formProblem("it has more than one payload field");
        }
        found = eq < 0 ? new byte[0] : decode(form, eq + 1, end);
      }
      start = end + 1;
    }
    if (found == null) {
      throw formProblem("it has no payload field");
    }
    return found;
  }

  private static int indexOf(byte[] b, byte c, int from) {
    for (int i = from; i < b.length; i++) {
      if (b[i] == c) {
        return i;
      }
    }
    return b.length;
  }

  /** Percent-decodes {@code b[from, to)}, with {@code +} as a space. */
  private static byte[] decode(byte[] b, int from, int to) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(0, to - from));
    for (int i = from; i < to; i++) {
      byte c = b[i];
      if (c == '+') {
        out.write(' ');
      } else if (c == '%') {
        int hi = i + 1 < to ? Character.digit(b[i + 1], 16) : -1;
        int lo = i + 2 < to ? Character.digit(b[i + 2], 16) : -1;
        if (hi < 0 || lo < 0) {
          throw formProblem("it has a % not followed by two hex digits");
        }
        out.write((hi << 4) | lo);
        i += 2;
      } else {
        out.write(c);
      }
    }
    return out.toByteArray();
  }

  private static SignatureException formProblem(String what) {
    return new SignatureException(
        Reason.MISSING,
        "the body is sent as "
            + FORM_TYPE
            + " but "
            + what
            + "; GitHub sends payload=<json> for that content type (or set the webhook's"
            + " content type to application/json)");
  }

  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    return Optional.ofNullable(SignatureSupport.optionalHeader(headers, DELIVERY_HEADER));
  }
}
