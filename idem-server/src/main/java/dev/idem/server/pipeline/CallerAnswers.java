package dev.idem.server.pipeline;

import dev.idem.server.auth.CallerException;
import java.util.Map;

/** The answers to a refused caller; each says that nothing was recorded. */
final class CallerAnswers {
  private CallerAnswers() {}

  /**
   * Returns the answer to a refused caller: {@code 401 invalid_token} with {@code WWW-Authenticate:
   * Bearer error="invalid_token"}, {@code 403 delegation_too_deep}, or {@code 503 keys_unavailable}
   * with {@code Retry-After}.
   */
  static Answer refused(CallerException e) {
    Map<String, String> headers =
        switch (e.reason()) {
          case INVALID_TOKEN -> Map.of("WWW-Authenticate", "Bearer error=\"invalid_token\"");
          case DELEGATION_TOO_DEEP -> Map.of();
          case KEYS_UNAVAILABLE -> Map.of("Retry-After", Pipeline.STORE_RETRY_AFTER);
          case CLIENT_CERTIFICATE_REQUIRED, CLIENT_CERTIFICATE_NOT_ACCEPTED, MISSING_PRINCIPAL ->
              Map.of();
        };
    return Answer.error(
        e.reason().status(),
        e.reason().code(),
        e.getMessage() + "; nothing was recorded for this request",
        headers);
  }
}
