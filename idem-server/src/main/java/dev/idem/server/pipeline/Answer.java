package dev.idem.server.pipeline;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;

/**
 * What the service answers to one request: a status, headers and a body. Every error body is {@code
 * {"error":"<code>","message":"<what to do>"}}.
 *
 * @param status the HTTP status
 * @param contentType the body's content type
 * @param headers extra headers (e.g. {@code Retry-After}, {@code Allow})
 * @param body the body; callers must not modify it
 */
public record Answer(int status, String contentType, Map<String, String> headers, byte[] body) {
  /** JSON, UTF-8. */
  public static final String JSON = "application/json";

  private static final byte[] ACCEPTED_BODY =
      "{\"accepted\":true,\"duplicate\":false}".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] DUPLICATE_BODY =
      "{\"accepted\":true,\"duplicate\":true}".getBytes(StandardCharsets.US_ASCII);

  private static final byte[] STALE_BODY =
      "{\"accepted\":true,\"duplicate\":true,\"stale\":true}".getBytes(StandardCharsets.US_ASCII);

  /**
   * {@code 200 {"accepted":true,"duplicate":true,"stale":true}}: sequence mode dropped an event
   * older than its ordering key's last one; like a duplicate, the sender must stop retrying.
   */
  public static final Answer STALE = new Answer(200, JSON, Map.of(), STALE_BODY);

  /** {@code 202 {"accepted":true,"duplicate":false}}: the event is new and was accepted. */
  public static final Answer ACCEPTED = new Answer(202, JSON, Map.of(), ACCEPTED_BODY);

  /** {@code 200 {"accepted":true,"duplicate":true}}: a duplicate; the sender must stop retrying. */
  public static final Answer DUPLICATE = new Answer(200, JSON, Map.of(), DUPLICATE_BODY);

  /** Validates the fields and copies the headers. */
  public Answer {
    Objects.requireNonNull(contentType, "contentType");
    headers = Map.copyOf(headers);
    Objects.requireNonNull(body, "body");
  }

  /**
   * Returns an error answer with the standard body.
   *
   * @param status the HTTP status
   * @param code the machine-readable error code, e.g. {@code in_flight}
   * @param message what happened and what to do
   * @return the answer
   */
  public static Answer error(int status, String code, String message) {
    return error(status, code, message, Map.of());
  }

  /**
   * Returns an error answer with the standard body and extra headers.
   *
   * @param status the HTTP status
   * @param code the machine-readable error code
   * @param message what happened and what to do
   * @param headers extra headers
   * @return the answer
   */
  public static Answer error(int status, String code, String message, Map<String, String> headers) {
    StringBuilder b = new StringBuilder(message.length() + code.length() + 32);
    b.append("{\"error\":");
    Json.quote(b, code);
    b.append(",\"message\":");
    Json.quote(b, message);
    b.append('}');
    return new Answer(status, JSON, headers, b.toString().getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Returns a JSON answer.
   *
   * @param status the HTTP status
   * @param json the body
   * @return the answer
   */
  public static Answer json(int status, String json) {
    return new Answer(status, JSON, Map.of(), json.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Returns this answer with one more header.
   *
   * @param name the header name
   * @param value its value
   * @return a new answer
   */
  public Answer withHeader(String name, String value) {
    Map<String, String> h = new java.util.HashMap<>(headers);
    h.put(name, value);
    return new Answer(status, contentType, h, body);
  }

  /**
   * Returns the body as text, for logs and tests.
   *
   * @return the body decoded as UTF-8
   */
  public String bodyText() {
    return new String(body, StandardCharsets.UTF_8);
  }
}
