package dev.idem.server.logging;

import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * The structured fields of a log line: put in the SLF4J MDC while the line is logged, and removed
 * right after, so they never leak into the thread's later lines. The JSON log format writes them
 * under {@code "mdc"}; the text format shows only the message, which repeats them.
 *
 * <pre>{@code
 * LogFields.decision(pipeline, key.toHex(), "duplicate",
 *     () -> LOG.debug("decision pipeline={} key={} decision={}", ...));
 * }</pre>
 */
public final class LogFields {
  /** The pipeline id. */
  public static final String PIPELINE = "pipeline";

  /** The event key's SHA-256 digest, 64 hex digits (never the raw key material). */
  public static final String KEY_DIGEST = "key_digest";

  /** The dedup decision: pass, duplicate, in_flight, conflict, released, store_unavailable. */
  public static final String DECISION = "decision";

  /** The outbox entry id of an async delivery. */
  public static final String DELIVERY_ID = "delivery_id";

  private LogFields() {}

  /**
   * Logs a line about a dedup decision with its fields.
   *
   * @param pipeline the pipeline id
   * @param keyDigest the key's digest in hex
   * @param decision what was decided
   * @param line logs the line
   */
  public static void decision(String pipeline, String keyDigest, String decision, Runnable line) {
    with(line, PIPELINE, pipeline, KEY_DIGEST, keyDigest, DECISION, decision);
  }

  /**
   * Logs a line about an outbox delivery with its fields.
   *
   * @param pipeline the pipeline (outbox queue) id
   * @param deliveryId the outbox entry id
   * @param keyDigest the event key's digest in hex, or null if unknown
   * @param line logs the line
   */
  public static void delivery(
      String pipeline, long deliveryId, @Nullable String keyDigest, Runnable line) {
    if (keyDigest == null) {
      with(line, PIPELINE, pipeline, DELIVERY_ID, Long.toString(deliveryId));
    } else {
      with(line, PIPELINE, pipeline, DELIVERY_ID, Long.toString(deliveryId), KEY_DIGEST, keyDigest);
    }
  }

  private static void with(Runnable line, String... keyValues) {
    for (int i = 0; i < keyValues.length; i += 2) {
      MDC.put(keyValues[i], keyValues[i + 1]);
    }
    try {
      line.run();
    } finally {
      for (int i = 0; i < keyValues.length; i += 2) {
        MDC.remove(keyValues[i]);
      }
    }
  }
}
