package dev.idem.server.signature;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.idem.TimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Stripe: {@code Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]}, where each {@code v1}
 * is the hex HMAC-SHA256 of {@code t + "." + body} keyed with the endpoint's signing secret (the
 * whole {@code whsec_...} string, as UTF-8). Any matching {@code v1} under any configured secret is
 * accepted: during a secret roll Stripe signs with the old and the new secret. Other schemes
 * ({@code v0}, test-mode signatures) are ignored.
 */
final class StripeVerifier implements SignatureVerifier {
  static final String HEADER = "Stripe-Signature";
  private static final JsonFactory JSON = new JsonFactory();

  private final SigningKeys keys;
  private final Duration tolerance;
  private final TimeSource time;

  StripeVerifier(SignatureSettings settings, TimeSource time) {
    this.keys = SigningKeys.utf8(settings.secrets());
    this.tolerance = settings.tolerance();
    this.time = time;
  }

  @Override
  public SignatureScheme scheme() {
    return SignatureScheme.STRIPE;
  }

  @Override
  public void verify(byte[] rawBody, Function<String, @Nullable String> headers) {
    String header = SignatureSupport.requireHeader(headers, HEADER, "Stripe");
    String timestamp = null;
    List<String> signatures = new ArrayList<>(2);
    for (String item : header.split(",", -1)) {
      int eq = item.indexOf('=');
      if (eq <= 0) {
        continue;
      }
      String name = item.substring(0, eq).trim();
      String value = item.substring(eq + 1).trim();
      if (name.equals("t")) {
        if (timestamp != null) {
          throw malformed("it has more than one t= timestamp");
        }
        timestamp = value;
      } else if (name.equals("v1")) {
        signatures.add(value);
      }
    }
    if (timestamp == null) {
      throw malformed("it has no t= timestamp");
    }
    long seconds = SignatureSupport.parseUnixSeconds(timestamp);
    if (seconds < 0) {
      throw malformed("its t= is not unix seconds");
    }
    if (signatures.isEmpty()) {
      throw malformed("it has no v1= signature (Idem checks Stripe's v1 scheme, HMAC-SHA256)");
    }
    List<byte[]> given = new ArrayList<>(signatures.size());
    for (String signature : signatures) {
      byte[] decoded = SignatureSupport.decodeHex(signature, 32);
      if (decoded != null) {
        given.add(decoded);
      }
    }
    boolean matched =
        keys.matchesAny((timestamp + ".").getBytes(StandardCharsets.US_ASCII), rawBody, given);
    if (!matched) {
      throw new SignatureException(
          Reason.INVALID,
          "no v1 signature in the "
              + HEADER
              + " header matches the body; check that signature.secret is this endpoint's"
              + " signing secret (whsec_...) and that nothing rewrites the body on the way");
    }
    // Checked after the signature, so that STALE always means "authentic but too old or new".
    SignatureSupport.checkTolerance(seconds, time, tolerance, HEADER);
  }

  private static SignatureException malformed(String what) {
    return new SignatureException(
        Reason.MISSING,
        "the "
            + HEADER
            + " header is malformed: "
            + what
            + "; Stripe sends t=<unix seconds>,v1=<hex signature>");
  }

  /** The event's top-level {@code id} ({@code evt_...}), read with a streaming parser. */
  @Override
  public Optional<String> deliveryId(byte[] rawBody, Function<String, @Nullable String> headers) {
    try (JsonParser parser = JSON.createParser(rawBody)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return Optional.empty();
      }
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String field = parser.currentName();
        JsonToken value = parser.nextToken();
        if ("id".equals(field)) {
          if (value == JsonToken.VALUE_STRING) {
            String id = parser.getText();
            return id.isBlank() ? Optional.empty() : Optional.of(id);
          }
          return Optional.empty();
        }
        parser.skipChildren();
      }
      return Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    }
  }
}
