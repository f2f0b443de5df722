package dev.idem.server.deliver;

import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One event to deliver downstream.
 *
 * @param pipeline the pipeline id
 * @param idempotencyKey sent downstream as the {@code Idempotency-Key} header (and stored by the
 *     file and JDBC sinks), so downstream can deduplicate Idem's own retries
 * @param orderingKey the event's ordering key when the pipeline orders events, else null; the
 *     asynchronous dispatcher delivers events with the same ordering key one at a time, in order
 * @param body the event body, UTF-8 JSON; callers must not modify it
 * @param headers extra headers to send (e.g. {@code Content-Type}); never null
 * @param checkedJson whether the body is exactly one JSON value the pipeline's body check accepted
 *     (the event as received, not a transform's output), so a sink may copy it without parsing it
 *     again; false when unknown
 */
public record Delivery(
    String pipeline,
    String idempotencyKey,
    @Nullable String orderingKey,
    byte[] body,
    Map<String, String> headers,
    boolean checkedJson) {

  /** Validates the fields and copies the headers. */
  public Delivery {
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(body, "body");
    headers = Map.copyOf(headers);
  }

  /**
   * Makes a delivery whose body was not checked by the pipeline (a transform's output, a decoded
   * outbox entry).
   *
   * @param pipeline the pipeline id
   * @param idempotencyKey the {@code Idempotency-Key}
   * @param orderingKey the ordering key, or null
   * @param body the event body, UTF-8 JSON
   * @param headers extra headers to send
   */
  public Delivery(
      String pipeline,
      String idempotencyKey,
      @Nullable String orderingKey,
      byte[] body,
      Map<String, String> headers) {
    this(pipeline, idempotencyKey, orderingKey, body, headers, false);
  }
}
