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
 */
public record Delivery(
    String pipeline,
    String idempotencyKey,
    @Nullable String orderingKey,
    byte[] body,
    Map<String, String> headers) {

  /** Validates the fields and copies the headers. */
  public Delivery {
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(body, "body");
    headers = Map.copyOf(headers);
  }
}
