package dev.idem.server.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Fingerprint;
import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.TimeSource;
import dev.idem.key.CanonicalJson;
import dev.idem.key.NumberOutOfRangeException;
import dev.idem.key.Principal;
import dev.idem.server.Edge;
import dev.idem.server.config.DedupMode;
import dev.idem.server.config.DeliveryMode;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.http.AdminApi;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.JsonBodyCheck;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.signature.SignatureException;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.transform.Transform;
import dev.idem.server.transform.TransformException;
import dev.idem.spi.KeyState;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * Answers "what would this pipeline do with this event, and why?" without changing anything: it
 * runs the pipeline's own checks in its order (signature, JSON, key), reads the key's state in the
 * store ({@code inspect}, which reserves nothing and refreshes no window), and names the decision
 * the pipeline would make: {@code rejected} (with the answer a sender would get), {@code pass}
 * (new, processed and delivered), {@code dropped} (new, but the transform outputs nothing), {@code
 * duplicate}, {@code in_flight} or {@code conflict}. The answer says in a sentence why, and what an
 * operator can do about it.
 *
 * <p>It reads the pipeline through its public accessors ({@link Pipeline#keys()}, {@link
 * Pipeline#dedup()}, {@link Pipeline#settings()}); the signature verifier and the transform are
 * built from the settings. A caller authenticated by {@code auth.jwt} is not authenticated here:
 * the request names the principal chain the key uses.
 *
 * <p>Thread-safe.
 */
public final class Explainer {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * An event to explain.
   *
   * @param body the raw body, exactly as the sender sends it
   * @param headers the sender's headers (names in any case)
   * @param principals the caller's principal chain, for pipelines keyed by it (empty otherwise)
   */
  public record Event(byte[] body, Map<String, String> headers, List<Principal> principals) {
    /** Copies the headers into a case-insensitive map and the chain. */
    public Event {
      Objects.requireNonNull(body, "body");
      TreeMap<String, String> h = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      h.putAll(headers);
      headers = h;
      principals = List.copyOf(principals);
    }
  }

  private final Pipeline pipeline;
  private final @Nullable SignatureVerifier verifier;
  private final @Nullable Transform transform;
  private final TimeSource time;
  private final JsonBodyCheck json;

  /**
   * Creates the explainer of one pipeline.
   *
   * @param pipeline the pipeline
   * @param verifier its signature verifier, or null if it checks none
   * @param transform its transform, or null if it has none
   * @param time the clock that decides whether a lease or window still runs
   */
  public Explainer(
      Pipeline pipeline,
      @Nullable SignatureVerifier verifier,
      @Nullable Transform transform,
      TimeSource time) {
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.verifier = verifier;
    this.transform = transform;
    this.time = Objects.requireNonNull(time, "time");
    this.json =
        new JsonBodyCheck(
            pipeline.settings().source().maxDepth(), pipeline.settings().source().maxBody());
  }

  /**
   * Creates the explainer of one pipeline with the signature verifier and transform its settings
   * name.
   *
   * @param pipeline the pipeline
   * @param edge makes the verifier and the transform
   * @param time the clock
   * @return the explainer
   */
  public static Explainer of(Pipeline pipeline, Edge edge, TimeSource time) {
    PipelineSettings s = pipeline.settings();
    SignatureSettings sig = s.webhook() == null ? null : s.webhook().signature();
    String jq = s.jq();
    return new Explainer(
        pipeline,
        sig == null ? null : edge.verifier(sig, time),
        jq == null ? null : edge.transform(jq),
        time);
  }

  /**
   * Explains an event.
   *
   * @param event the event
   * @return a JSON object: {@code pipeline}, {@code checks} (each step and its result), {@code key}
   *     (rule, digest, {@code Idempotency-Key}, principals), {@code state} (as {@code GET
   *     /admin/pipelines/{id}/keys/{key}} prints it), {@code decision}, {@code answer} (the status
   *     a sender would get) and {@code why}
   * @throws dev.idem.StoreUnavailableException if the store cannot be read
   */
  public ObjectNode explain(Event event) {
    ObjectNode out = JSON.createObjectNode();
    out.put("pipeline", pipeline.id());
    ArrayNode checks = out.putArray("checks");
    byte[] body = event.body();
    InboundRequest request = new InboundRequest(body, event.headers()::get, event.principals());

    if (verifier != null) {
      try {
        body = verifier.verifiedBody(body, event.headers()::get);
        request = new InboundRequest(body, event.headers()::get, event.principals());
        check(checks, "signature", "ok", "the signature is valid");
      } catch (SignatureException e) {
        check(checks, "signature", "failed", e.getMessage());
        return rejected(
            out,
            Answer.error(401, "invalid_signature", e.getMessage()),
            "the signature check failed ("
                + e.getMessage()
                + "), so nothing was reserved; check the secret in source.webhook.signature and"
                + " that the body is byte for byte what the provider signed");
      }
    } else {
      check(checks, "signature", "skipped", "the pipeline checks no signature");
    }

    Outcome.Rejected bad = json.check(body);
    if (bad != null) {
      check(checks, "json", "failed", bad.message());
      return rejected(
          out,
          Answer.error(400, bad.code(), bad.message()),
          "the body is not acceptable JSON (" + bad.message() + "), so the sender got 400");
    }
    check(checks, "json", "ok", "the body is well-formed JSON within the limits");

    ObjectNode keyNode = out.putObject("key");
    keyNode.put("rule", pipeline.keys().describe());
    if (!event.principals().isEmpty()) {
      ArrayNode chain = keyNode.putArray("principals");
      for (Principal p : event.principals()) {
        chain.addObject().put("issuer", p.issuer()).put("subject", p.subject());
      }
    } else if (pipeline.settings().webhook() != null
        && pipeline.settings().webhook().jwt() != null) {
      keyNode.put(
          "note",
          "this pipeline authenticates callers (auth.jwt) and may key by their principal chain;"
              + " give principals to explain the key a caller gets");
    }
    DedupKey key;
    try {
      key = pipeline.keys().derive(request);
    } catch (NumberOutOfRangeException e) {
      check(checks, "key", "failed", e.getMessage());
      return rejected(
          out, Answer.error(400, "number_out_of_range", e.getMessage()), e.getMessage());
    } catch (KeyDerivationException e) {
      check(checks, "key", "failed", e.getMessage());
      return rejected(
          out,
          Answer.error(400, "missing_key", e.getMessage()),
          "no key could be derived (" + e.getMessage() + "), so the sender got 400");
    }
    keyNode.put("digest", key.toHex());
    keyNode.put("idempotency_key", pipeline.idempotencyKey(key));
    check(checks, "key", "ok", key.toHex());

    Deduplicator dedup = pipeline.dedup();
    if (dedup == null) {
      out.putNull("state");
      return transformed(
          out, checks, body, "pass", 202, "the pipeline has no dedup step: every event passes");
    }
    KeyState state = dedup.inspect(key);
    out.set("state", AdminApi.describe(pipeline.id(), key.toHex(), key, state));
    long now = time.wallMillis();
    if (state instanceof KeyState.InFlight f && f.leaseUntilMillis() > now) {
      return decided(
          out,
          "in_flight",
          409,
          "an event with this key is being processed since "
              + iso(f.reservedAtMillis())
              + " (lease until "
              + iso(f.leaseUntilMillis())
              + "); this one would be answered 409 and the sender retries");
    }
    if (state instanceof KeyState.Committed c && c.expiresAtMillis() > now) {
      boolean replay =
          pipeline.settings().dedup() != null
              && pipeline.settings().dedup().mode() == DedupMode.REPLAY;
      if (replay && c.fingerprint() != null) {
        Fingerprint fp;
        try {
          fp = CanonicalJson.fingerprint(body);
        } catch (IdemException e) {
          fp = null;
        }
        if (fp != null && !fp.equals(c.fingerprint())) {
          return decided(
              out,
              "conflict",
              422,
              "the key was committed at "
                  + iso(c.committedAtMillis())
                  + " with a different payload; a new request needs a new key (answered 422"
                  + " key_reused)");
        }
      }
      return decided(
          out,
          "duplicate",
          200,
          "dropped as a duplicate: an event with this key was accepted at "
              + iso(c.committedAtMillis())
              + (c.expiresAtMillis() == Long.MAX_VALUE
                  ? " and is kept forever"
                  : " and is remembered until " + iso(c.expiresAtMillis()))
              + (replay ? "; the stored answer is replayed" : "")
              + ". To deliver it again: requeue its dead letter if it has one, or forget the key"
              + " (DELETE /admin/pipelines/"
              + pipeline.id()
              + "/keys/"
              + key.toHex()
              + "?form=digest) and have the sender resend");
    }
    String why =
        state instanceof KeyState.Absent
            ? "the key is new"
            : "the key's "
                + (state instanceof KeyState.InFlight ? "lease" : "window")
                + " has run out, so it counts as new";
    return transformed(out, checks, body, "pass", 202, why);
  }

  /** A new event: the transform decides whether it is delivered or dropped. */
  private ObjectNode transformed(
      ObjectNode out, ArrayNode checks, byte[] body, String decision, int status, String why) {
    String delivery =
        pipeline.settings().deliver().mode() == DeliveryMode.ASYNC
            ? "accepted into the outbox and delivered from there"
            : "delivered before the sender is answered";
    if (transform == null) {
      return decided(out, decision, status, why + "; it would be " + delivery);
    }
    try {
      List<byte[]> outputs = transform.apply(body);
      if (outputs.isEmpty()) {
        check(checks, "transform", "dropped", "the jq program outputs nothing for this event");
        return decided(
            out,
            "dropped",
            202,
            why
                + ", but the transform outputs nothing for it: it is answered 202 and not"
                + " delivered, and its key is released");
      }
      check(checks, "transform", "ok", outputs.size() + " output(s)");
      return decided(
          out, decision, status, why + "; " + outputs.size() + " output(s) would be " + delivery);
    } catch (TransformException e) {
      check(checks, "transform", "failed", e.getMessage());
      return decided(
          out,
          "rejected",
          500,
          why
              + ", but the transform fails on it ("
              + e.getMessage()
              + "): answered 500 and its key released");
    }
  }

  private static ObjectNode rejected(ObjectNode out, Answer answer, String why) {
    out.put("decision", "rejected");
    ObjectNode a = out.putObject("answer");
    a.put("status", answer.status());
    try {
      JsonNode body = JSON.readTree(answer.body());
      if (body != null && body.has("error")) {
        a.put("error", body.get("error").asText());
      }
    } catch (java.io.IOException e) {
      // A plain answer has no code.
    }
    out.put("why", why);
    return out;
  }

  private static ObjectNode decided(ObjectNode out, String decision, int status, String why) {
    out.put("decision", decision);
    out.putObject("answer").put("status", status);
    out.put("why", why);
    return out;
  }

  private static void check(ArrayNode checks, String step, String result, String detail) {
    checks.addObject().put("step", step).put("result", result).put("detail", detail);
  }

  private static String iso(long millis) {
    return Instant.ofEpochMilli(millis).toString();
  }
}
