package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A NATS JetStream source ({@code source.nats}): a durable pull consumer with explicit acks on a
 * stream. Each fetched batch goes through the pipeline; a message is acked once settled, nak'ed
 * with a delay when the key is in flight or the store is unavailable, and terminated (after its
 * dead letter, when one is configured) when it is bad input.
 *
 * @param url the server URL(s), comma separated, e.g. {@code nats://127.0.0.1:4222}
 * @param stream the stream to consume; it must exist
 * @param durable the durable consumer's name; created (explicit ack) if missing
 * @param subject the consumer's filter subject when it is created, or null for the whole stream
 * @param batch how many messages one fetch asks for (and one batch reserve takes)
 * @param ackWait how long the server waits for an ack before it redelivers (while the work runs the
 *     source sends in-progress every third of it)
 * @param maxDeliver the consumer's delivery limit when it is created; -1 for none (the default, so
 *     that in-flight and store-outage retries never exhaust a message)
 * @param maxAttempts how many deliveries a message whose processing failed (delivery or transform)
 *     gets before it is dead-lettered
 * @param deadLetter the subject bad messages are published to (through JetStream: a stream must
 *     capture it), or null to log and terminate them
 * @param backoff the first retry delay (nak delay) after a failure or an outage
 * @param maxBackoff the longest retry delay
 * @param maxBody the largest message body accepted, in bytes
 * @param maxDepth the deepest JSON nesting accepted
 */
public record NatsSourceSettings(
    String url,
    String stream,
    String durable,
    @Nullable String subject,
    int batch,
    Duration ackWait,
    long maxDeliver,
    int maxAttempts,
    @Nullable String deadLetter,
    Duration backoff,
    Duration maxBackoff,
    long maxBody,
    int maxDepth)
    implements SourceSettings {

  /** The default server: {@code nats://127.0.0.1:4222}. */
  public static final String DEFAULT_URL = "nats://127.0.0.1:4222";

  /** The default batch: 100 messages per fetch. */
  public static final int DEFAULT_BATCH = 100;

  /** The largest batch: 10,000 messages. */
  public static final int MAX_BATCH = 10_000;

  /** The default ack wait: 30 seconds (the server's default). */
  public static final Duration DEFAULT_ACK_WAIT = Duration.ofSeconds(30);

  /** The default attempts of a message whose processing failed: 5. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** The default first retry delay: 1 second. */
  public static final Duration DEFAULT_BACKOFF = Duration.ofSeconds(1);

  /** The default longest retry delay: 30 seconds. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(30);

  /** The default body limit: 1 MiB (the server's default max_payload). */
  public static final long DEFAULT_MAX_BODY = 1L << 20;

  /** The largest body limit: 64 MiB (the server's largest max_payload). */
  public static final long MAX_MAX_BODY = 64L << 20;

  /** The default nesting limit: 64. */
  public static final int DEFAULT_MAX_DEPTH = 64;

  private static final String NAME = "[A-Za-z0-9_-]+";

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public NatsSourceSettings {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(stream, "stream");
    Objects.requireNonNull(durable, "durable");
    Objects.requireNonNull(ackWait, "ackWait");
    Objects.requireNonNull(backoff, "backoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    checkUrl(url);
    if (!stream.matches(NAME)) {
      throw new IdemConfigException(
          "stream: '" + stream + "' is not a stream name; use letters, digits, - and _");
    }
    if (!durable.matches(NAME)) {
      throw new IdemConfigException(
          "durable: '" + durable + "' is not a consumer name; use letters, digits, - and _");
    }
    if (subject != null) {
      checkSubject(subject, "subject", true);
    }
    if (deadLetter != null) {
      checkSubject(deadLetter, "dead_letter", false);
    }
    if (batch < 1 || batch > MAX_BATCH) {
      throw new IdemConfigException("batch must be from 1 to " + MAX_BATCH + ", got " + batch);
    }
    if (ackWait.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new IdemConfigException(
          "ack_wait must be at least 1s (in-progress is sent every third of it), got "
              + Durations.format(ackWait));
    }
    if (maxDeliver == 0 || maxDeliver < -1) {
      throw new IdemConfigException(
          "max_deliver must be -1 (no limit) or at least 1, got " + maxDeliver);
    }
    if (maxAttempts < 1) {
      throw new IdemConfigException("max_attempts must be at least 1, got " + maxAttempts);
    }
    if (maxDeliver > 0 && maxAttempts > maxDeliver) {
      throw new IdemConfigException(
          "max_attempts ("
              + maxAttempts
              + ") must not exceed max_deliver ("
              + maxDeliver
              + "): the server would stop redelivering before the dead letter");
    }
    if (backoff.toMillis() < 1) {
      throw new IdemConfigException("backoff must be at least 1ms");
    }
    if (maxBackoff.compareTo(backoff) < 0) {
      throw new IdemConfigException(
          "max_backoff ("
              + Durations.format(maxBackoff)
              + ") must be at least backoff ("
              + Durations.format(backoff)
              + ")");
    }
    if (maxBody < 1 || maxBody > MAX_MAX_BODY) {
      throw new IdemConfigException(
          "max_body must be from 1 byte to 64MiB, got " + DataSizes.format(maxBody));
    }
    if (maxDepth < 1 || maxDepth > MAX_MAX_DEPTH) {
      throw new IdemConfigException(
          "max_depth must be from 1 to " + MAX_MAX_DEPTH + ", got " + maxDepth);
    }
  }

  /**
   * Makes a source with the defaults for everything but the names.
   *
   * @param url the server URL
   * @param stream the stream
   * @param durable the durable consumer
   * @param subject the filter subject, or null
   * @return the settings
   */
  public static NatsSourceSettings of(
      String url, String stream, String durable, @Nullable String subject) {
    return new NatsSourceSettings(
        url,
        stream,
        durable,
        subject,
        DEFAULT_BATCH,
        DEFAULT_ACK_WAIT,
        -1,
        DEFAULT_MAX_ATTEMPTS,
        null,
        DEFAULT_BACKOFF,
        DEFAULT_MAX_BACKOFF,
        DEFAULT_MAX_BODY,
        DEFAULT_MAX_DEPTH);
  }

  /**
   * Checks a NATS server URL list ({@code nats://host:port}, comma separated).
   *
   * @param url the URL(s)
   * @throws IdemConfigException if one is not a NATS URL
   */
  public static void checkUrl(String url) {
    if (url.isBlank()) {
      throw new IdemConfigException("url is blank; give e.g. nats://127.0.0.1:4222");
    }
    for (String one : url.split(",")) {
      String u = one.trim();
      if (!u.matches("(nats|tls|ws|wss)://[^\\s/]+(:\\d+)?/?")) {
        throw new IdemConfigException(
            "url: '"
                + Masking.url(u)
                + "' is not a NATS URL; use nats://host:port (or tls://, ws://, wss://)");
      }
    }
  }

  /**
   * Checks a subject: dot-separated tokens, wildcards only where allowed.
   *
   * @param subject the subject
   * @param field the field name for the message
   * @param wildcards whether {@code *} and {@code >} are allowed
   * @throws IdemConfigException if it is not a subject
   */
  public static void checkSubject(String subject, String field, boolean wildcards) {
    String token = wildcards ? "([^\\s.*>]+|\\*)" : "[^\\s.*>]+";
    String pattern = token + "(\\." + token + ")*" + (wildcards ? "(\\.>)?|>" : "");
    if (!subject.matches(pattern)) {
      throw new IdemConfigException(
          field
              + ": '"
              + subject
              + "' is not a "
              + (wildcards ? "subject" : "subject without wildcards")
              + " (dot-separated tokens, e.g. orders.created"
              + (wildcards ? " or orders.>" : "")
              + ")");
    }
  }

  @Override
  public String type() {
    return "nats";
  }

  /**
   * The default key: the {@code Nats-Msg-Id} header, which JetStream publishers set for the
   * stream's own duplicate window.
   */
  @Override
  public KeySpec defaultKey() {
    return KeySpec.single("header(\"Nats-Msg-Id\")");
  }

  @Override
  public Map<String, Object> printable() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("url", Masking.url(url));
    m.put("stream", stream);
    m.put("durable", durable);
    if (subject != null) {
      m.put("subject", subject);
    }
    m.put("batch", batch);
    m.put("ack_wait", Durations.format(ackWait));
    m.put("max_deliver", maxDeliver);
    m.put("max_attempts", maxAttempts);
    if (deadLetter != null) {
      m.put("dead_letter", deadLetter);
    }
    m.put("backoff", Durations.format(backoff));
    m.put("max_backoff", Durations.format(maxBackoff));
    m.put("max_body", DataSizes.format(maxBody));
    m.put("max_depth", maxDepth);
    return m;
  }

  /** Hides credentials in the URL. */
  @Override
  public String toString() {
    return "NatsSourceSettings" + printable();
  }
}
