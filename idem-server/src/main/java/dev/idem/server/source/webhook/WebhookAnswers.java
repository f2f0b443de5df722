package dev.idem.server.source.webhook;

import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.StoredAnswer;
import java.util.Map;

/**
 * The webhook contract: what HTTP answer each pipeline {@link Outcome} gets.
 *
 * <ul>
 *   <li>accepted: {@code 202 {"accepted":true,"duplicate":false}}; in replay mode the downstream's
 *       own answer, which is stored for duplicates;
 *   <li>duplicate: {@code 200 {"accepted":true,"duplicate":true}}, or in replay mode the stored
 *       answer with {@code Idempotent-Replayed: true};
 *   <li>stale (sequence mode: older than the ordering key's last processed event): {@code 200
 *       {"accepted":true,"duplicate":true,"stale":true}}, answered like a duplicate;
 *   <li>in flight: {@code 409 in_flight} with {@code Retry-After}; replay conflict: {@code 422
 *       key_reused};
 *   <li>bad input (no key, bad JSON, duplicate field names, nesting too deep): {@code 400}; bad
 *       signature: {@code 401}; a missing or invalid bearer token: {@code 401 invalid_token} with
 *       {@code WWW-Authenticate}; a delegation chain too deep: {@code 403 delegation_too_deep};
 *   <li>unavailable (store down, lease ran out, the JWKS unreachable): {@code 503} with {@code
 *       Retry-After}, nothing committed;
 *   <li>sync delivery failed after its retries: {@code 502 delivery_failed}, the key released so
 *       the sender's retry is accepted; transform failed or anything else: {@code 500}, key
 *       released.
 * </ul>
 */
public final class WebhookAnswers {
  private WebhookAnswers() {}

  /**
   * Returns the HTTP answer to an outcome.
   *
   * @param outcome the pipeline's outcome
   * @param replay whether the pipeline is in replay mode (duplicates get the stored answer)
   * @return the answer
   */
  public static Answer of(Outcome outcome, boolean replay) {
    if (outcome instanceof Outcome.Accepted a) {
      Outcome.Reply r = a.reply();
      return r == null ? Answer.ACCEPTED : reply(r);
    }
    if (outcome instanceof Outcome.Duplicate d) {
      byte[] stored = d.result();
      if (replay && stored != null) {
        Outcome.Reply r = StoredAnswer.decode(stored);
        return (r == null ? Answer.ACCEPTED : reply(r)).withHeader("Idempotent-Replayed", "true");
      }
      return Answer.DUPLICATE;
    }
    if (outcome instanceof Outcome.Stale) {
      return Answer.STALE;
    }
    if (outcome instanceof Outcome.InFlight f) {
      return Answer.error(
          409,
          "in_flight",
          "an event with this key is being processed now; retry later (the answer will then be a"
              + " duplicate, or it is processed if that attempt failed)",
          Map.of("Retry-After", Long.toString(f.retryAfterSeconds())));
    }
    if (outcome instanceof Outcome.Conflict) {
      return Answer.error(
          422,
          "key_reused",
          "this key was already used with a different payload; send a new key for a new request");
    }
    if (outcome instanceof Outcome.Rejected r) {
      return switch (r.kind()) {
        case BAD_INPUT -> Answer.error(400, r.code(), r.message());
        case BAD_SIGNATURE -> Answer.error(401, r.code(), r.message());
        case UNAUTHENTICATED ->
            r.code().equals("invalid_token")
                ? Answer.error(
                    401,
                    r.code(),
                    r.message(),
                    Map.of("WWW-Authenticate", "Bearer error=\"invalid_token\""))
                : Answer.error(401, r.code(), r.message());
        case FORBIDDEN -> Answer.error(403, r.code(), r.message());
      };
    }
    if (outcome instanceof Outcome.Unavailable u) {
      return Answer.error(
          503, u.code(), u.message(), Map.of("Retry-After", Long.toString(u.retryAfterSeconds())));
    }
    Outcome.Failed f = (Outcome.Failed) outcome;
    return Answer.error(f.kind() == Outcome.Failure.DELIVERY ? 502 : 500, f.code(), f.message());
  }

  private static Answer reply(Outcome.Reply r) {
    return new Answer(
        r.status(), r.contentType() == null ? Answer.JSON : r.contentType(), Map.of(), r.body());
  }
}
