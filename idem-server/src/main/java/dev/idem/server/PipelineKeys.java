package dev.idem.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import dev.idem.key.KeyEncoding;
import dev.idem.key.KeyRule;
import dev.idem.server.config.KeySpec;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.signature.SignatureVerifier;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A pipeline's key rule ({@code dedup.key}), built on {@link KeyRule}: an explicit rule (field
 * paths, headers, composite lists); or, without one, the library's default key (the caller's
 * principal chain plus the canonical body hash) for a source that authenticates callers; or the
 * provider's delivery id for a signed webhook; or the default key with an empty chain.
 */
abstract class PipelineKeys implements EventKeys {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Makes the keys of a pipeline.
   *
   * @param spec the explicit rule, or null
   * @param verifier the signature verifier, or null
   * @return the keys
   * @throws IdemConfigException if the rule does not parse
   */
  static PipelineKeys of(@Nullable KeySpec spec, @Nullable SignatureVerifier verifier) {
    return of(spec, verifier, false);
  }

  /**
   * Makes the keys of a pipeline.
   *
   * @param spec the explicit rule, or null
   * @param verifier the signature verifier, or null
   * @param callers whether the source authenticates callers (then the default key is the chain plus
   *     the body, even for a signed webhook)
   * @return the keys
   * @throws IdemConfigException if the rule does not parse
   */
  static PipelineKeys of(
      @Nullable KeySpec spec, @Nullable SignatureVerifier verifier, boolean callers) {
    if (spec != null) {
      return new Explicit(spec);
    }
    if (callers) {
      return new BodyHash(true);
    }
    if (verifier != null) {
      return new DeliveryId(verifier);
    }
    return new BodyHash(false);
  }

  /**
   * Parses a key spec into a rule.
   *
   * @param spec the spec
   * @return the rule
   * @throws IdemConfigException if it does not parse
   */
  static KeyRule rule(KeySpec spec) {
    return spec.composite()
        ? KeyRule.parse(spec.expressions())
        : KeyRule.parse(spec.expressions().get(0));
  }

  /** Keys from {@code dedup.key}. */
  static final class Explicit extends PipelineKeys {
    private final KeySpec spec;
    private final KeyRule rule;

    Explicit(KeySpec spec) {
      this.spec = spec;
      this.rule = rule(spec);
    }

    @Override
    public DedupKey derive(InboundRequest request) {
      return rule.derive(request);
    }

    @Override
    public DedupKey fromRaw(String raw) {
      if (!spec.composite()) {
        return rule.keyOf(List.of(raw));
      }
      int n = spec.expressions().size();
      JsonNode array;
      try {
        array = JSON.readTree(raw);
      } catch (IOException e) {
        array = null;
      }
      if (array == null || !array.isArray() || array.size() != n) {
        throw new KeyDerivationException(
            "this pipeline's key is composite ("
                + spec
                + "): give the JSON array of its "
                + n
                + " parts, each as it is in the event, e.g. [\"shop-1\",42]");
      }
      // Each part with its JSON type: a field holding the number 42 is not one holding "42".
      return rule.keyOfJson(raw);
    }

    @Override
    public String describe() {
      return "dedup.key " + spec;
    }
  }

  /** A signed webhook's delivery id (Stripe event id, X-GitHub-Delivery, ...). */
  static final class DeliveryId extends PipelineKeys {
    private final SignatureVerifier verifier;

    DeliveryId(SignatureVerifier verifier) {
      this.verifier = verifier;
    }

    @Override
    public DedupKey derive(InboundRequest request) {
      Optional<String> id = verifier.deliveryId(request.body(), request.headers());
      if (id.isEmpty() || id.get().isBlank()) {
        throw new KeyDerivationException(
            "the request has no "
                + verifier.scheme().configName()
                + " delivery id ("
                + idSource()
                + "), the default key of a signed webhook; send it, or set dedup.key");
      }
      return KeyEncoding.ofString(id.get());
    }

    private String idSource() {
      return switch (verifier.scheme()) {
        case STRIPE -> "the event's \"id\" field";
        case GITHUB -> "header X-GitHub-Delivery";
        case SHOPIFY -> "header X-Shopify-Webhook-Id";
        case STANDARD -> "header webhook-id";
      };
    }

    @Override
    public DedupKey fromRaw(String raw) {
      return KeyEncoding.ofString(raw);
    }

    @Override
    public String describe() {
      return "the " + verifier.scheme().configName() + " delivery id (" + idSource() + ")";
    }
  }

  /**
   * The library's default key: the principal chain (empty without caller authentication) plus the
   * canonical body hash.
   */
  static final class BodyHash extends PipelineKeys {
    private final KeyRule rule = KeyRule.defaultKey();
    private final boolean callers;

    BodyHash(boolean callers) {
      this.callers = callers;
    }

    @Override
    public DedupKey derive(InboundRequest request) {
      return rule.derive(request);
    }

    @Override
    public DedupKey fromRaw(String raw) {
      throw new KeyDerivationException(
          "this pipeline has no dedup.key, so its keys are hashes of the body (RFC 8785 canonical"
              + " JSON); give the key's 64-hex digest instead (admin API: ?form=digest; CLI:"
              + " --digest), e.g. from `idem key`");
    }

    @Override
    public String describe() {
      return callers
          ? "the default key: the caller's principal chain (a bearer token's iss, sub, then each"
              + " act; a client certificate's issuer and subject; or the trusted principal"
              + " header) plus SHA-256 of the body in RFC 8785 canonical JSON"
          : "the default key: SHA-256 of the body in RFC 8785 canonical JSON";
    }
  }
}
