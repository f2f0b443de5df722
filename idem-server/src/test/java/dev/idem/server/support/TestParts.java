package dev.idem.server.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.deliver.Sink;
import dev.idem.server.pipeline.Deliverer;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.signature.SignatureException;
import dev.idem.server.signature.SignatureScheme;
import dev.idem.server.signature.SignatureVerifier;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Optional;
import java.util.function.Function;

/** Small stand-ins for the parts other modules provide, for pipeline and HTTP tests. */
public final class TestParts {
  private static final ObjectMapper JSON = new ObjectMapper();

  private TestParts() {}

  /** The SHA-256 of "id:" + value, as the test key of an event whose "id" field is value. */
  public static DedupKey keyOf(String id) {
    try {
      return DedupKey.ofDigest(
          MessageDigest.getInstance("SHA-256")
              .digest(("id:" + id).getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  /** Keys events on their top-level "id" field. */
  public static EventKeys idField() {
    return new EventKeys() {
      @Override
      public DedupKey derive(InboundRequest request) {
        JsonNode id;
        try {
          id = JSON.readTree(request.body()).get("id");
        } catch (IOException e) {
          throw new KeyDerivationException("not JSON", e);
        }
        if (id == null || id.isNull()) {
          throw new KeyDerivationException("field id is missing; send it or change dedup.key");
        }
        if (id.asText().isBlank()) {
          throw new KeyDerivationException("blank key: field id is blank");
        }
        return keyOf(id.asText());
      }

      @Override
      public DedupKey fromRaw(String raw) {
        return keyOf(raw);
      }

      @Override
      public String describe() {
        return "field id";
      }
    };
  }

  /** Delivers with up to {@code retries} immediate retries (no backoff: tests only). */
  public static Deliverer retrying(Sink sink, int retries) {
    return d -> {
      DeliveryOutcome last = null;
      for (int i = 0; i <= retries; i++) {
        last = sink.deliver(d);
        if (last instanceof DeliveryOutcome.Delivered) {
          return last;
        }
      }
      return last;
    };
  }

  /** A verifier that accepts exactly {@code X-Test-Signature: valid}. */
  public static SignatureVerifier headerVerifier() {
    return new SignatureVerifier() {
      @Override
      public SignatureScheme scheme() {
        return SignatureScheme.STANDARD;
      }

      @Override
      public void verify(byte[] rawBody, Function<String, String> headers) {
        String s = headers.apply("X-Test-Signature");
        if (s == null) {
          throw new SignatureException(SignatureException.Reason.MISSING, "no X-Test-Signature");
        }
        if (!s.equals("valid")) {
          throw new SignatureException(SignatureException.Reason.INVALID, "signature mismatch");
        }
      }

      @Override
      public Optional<String> deliveryId(byte[] rawBody, Function<String, String> headers) {
        return Optional.ofNullable(headers.apply("webhook-id"));
      }
    };
  }
}
