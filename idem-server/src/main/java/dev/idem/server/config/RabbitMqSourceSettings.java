package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A RabbitMQ source ({@code source.rabbitmq}): consumes a queue with manual acknowledgements, each
 * message acknowledged only once the pipeline settled it.
 *
 * @param uri the broker, {@code amqp://user:password@host:5672/vhost} (or {@code amqps://})
 * @param queue the queue to consume; it must exist (Idem declares nothing)
 * @param prefetch how many unacknowledged messages each consumer holds (basic.qos), and so the
 *     largest batch one consumer reserves at once
 * @param consumers how many consumers (one channel and one thread each) read the queue
 * @param maxAttempts how many times a message whose delivery or transform failed is tried before it
 *     is rejected to the queue's dead-letter exchange
 * @param requeueDelay how long a message waits before it is put back when it cannot be settled now
 *     (key in flight, store unavailable, delivery failed); doubles while retries go on
 * @param maxRequeueDelay the longest such wait
 * @param maxBody the largest message body accepted, in bytes; larger is rejected
 * @param maxDepth the deepest JSON nesting accepted
 */
public record RabbitMqSourceSettings(
    URI uri,
    String queue,
    int prefetch,
    int consumers,
    int maxAttempts,
    Duration requeueDelay,
    Duration maxRequeueDelay,
    long maxBody,
    int maxDepth)
    implements SourceSettings {

  /**
   * The header name that reads the AMQP {@code message_id} property in key rules ({@code
   * header("amqp-message-id")}); the default key of a RabbitMQ pipeline.
   */
  public static final String MESSAGE_ID_HEADER = "amqp-message-id";

  /** The default prefetch per consumer: 50. */
  public static final int DEFAULT_PREFETCH = 50;

  /** The largest prefetch: 10,000. */
  public static final int MAX_PREFETCH = 10_000;

  /** The most consumers: 64. */
  public static final int MAX_CONSUMERS = 64;

  /** The default number of consumers when prefetch allows: 4 (fewer when prefetch is smaller). */
  public static final int DEFAULT_CONSUMERS = 4;

  /** The default attempts of a failed message: 5. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** The default wait before a message is put back: 1 second. */
  public static final Duration DEFAULT_REQUEUE_DELAY = Duration.ofSeconds(1);

  /** The default longest wait before a message is put back: 30 seconds. */
  public static final Duration DEFAULT_MAX_REQUEUE_DELAY = Duration.ofSeconds(30);

  /** The longest requeue delay allowed: 10 minutes. */
  public static final Duration MAX_DELAY = Duration.ofMinutes(10);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public RabbitMqSourceSettings {
    Objects.requireNonNull(uri, "uri");
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(requeueDelay, "requeueDelay");
    Objects.requireNonNull(maxRequeueDelay, "maxRequeueDelay");
    checkUri(uri);
    if (queue.isBlank() || queue.length() > 255) {
      throw new IdemConfigException(
          "queue: '" + queue + "' is not a queue name; name an existing queue (e.g. orders)");
    }
    if (prefetch < 1 || prefetch > MAX_PREFETCH) {
      throw new IdemConfigException(
          "prefetch must be from 1 to " + MAX_PREFETCH + ", got " + prefetch);
    }
    if (consumers < 1 || consumers > MAX_CONSUMERS) {
      throw new IdemConfigException(
          "consumers must be from 1 to " + MAX_CONSUMERS + ", got " + consumers);
    }
    if (maxAttempts < 1 || maxAttempts > 1000) {
      throw new IdemConfigException("max_attempts must be from 1 to 1000, got " + maxAttempts);
    }
    if (requeueDelay.toMillis() < 1 || requeueDelay.compareTo(MAX_DELAY) > 0) {
      throw new IdemConfigException(
          "requeue_delay must be from 1ms to 10m, got " + Durations.format(requeueDelay));
    }
    if (maxRequeueDelay.compareTo(requeueDelay) < 0 || maxRequeueDelay.compareTo(MAX_DELAY) > 0) {
      throw new IdemConfigException(
          "max_requeue_delay must be from requeue_delay ("
              + Durations.format(requeueDelay)
              + ") to 10m, got "
              + Durations.format(maxRequeueDelay));
    }
    if (maxBody < 1 || maxBody > WebhookSettings.MAX_MAX_BODY) {
      throw new IdemConfigException(
          "max_body must be from 1 byte to 64MiB, got " + DataSizes.format(maxBody));
    }
    if (maxDepth < 1 || maxDepth > MAX_MAX_DEPTH) {
      throw new IdemConfigException(
          "max_depth must be from 1 to " + MAX_MAX_DEPTH + ", got " + maxDepth);
    }
  }

  /**
   * Makes a source with the defaults for everything but the broker and the queue.
   *
   * @param uri the broker
   * @param queue the queue
   * @return the settings
   */
  public static RabbitMqSourceSettings of(URI uri, String queue) {
    return new RabbitMqSourceSettings(
        uri,
        queue,
        DEFAULT_PREFETCH,
        defaultConsumers(DEFAULT_PREFETCH),
        DEFAULT_MAX_ATTEMPTS,
        DEFAULT_REQUEUE_DELAY,
        DEFAULT_MAX_REQUEUE_DELAY,
        WebhookSettings.DEFAULT_MAX_BODY,
        WebhookSettings.DEFAULT_MAX_DEPTH);
  }

  /**
   * Returns the default number of consumers for a prefetch: 4, or the prefetch when smaller (so
   * {@code prefetch: 1} reads the queue with one consumer, one message at a time, in queue order).
   *
   * @param prefetch the prefetch
   * @return the number of consumers
   */
  public static int defaultConsumers(int prefetch) {
    return Math.max(1, Math.min(DEFAULT_CONSUMERS, prefetch));
  }

  /**
   * Checks that a URI is an AMQP URI.
   *
   * @param uri the URI
   * @throws IdemConfigException if it is not {@code amqp://} or {@code amqps://} with a host
   */
  static void checkUri(URI uri) {
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("amqp") && !scheme.equals("amqps") || uri.getHost() == null) {
      throw new IdemConfigException(
          "uri: '"
              + Masking.url(uri.toString())
              + "' is not an AMQP URI (e.g. amqp://guest:guest@127.0.0.1:5672/)");
    }
  }

  /**
   * Returns the virtual host a URI names. As the AMQP URI spec has it, the path after the first
   * {@code /} is the virtual host, URL-decoded; except that Idem reads a bare trailing {@code /}
   * ({@code amqp://host:5672/}) as the default virtual host {@code /}, not the empty name nobody
   * uses.
   *
   * @param uri an AMQP URI
   * @return the virtual host
   */
  public static String virtualHost(URI uri) {
    String path = uri.getRawPath();
    if (path == null || path.isEmpty() || path.equals("/")) {
      return "/";
    }
    return java.net.URLDecoder.decode(
        path.substring(1).replace("+", "%2B"), java.nio.charset.StandardCharsets.UTF_8);
  }

  @Override
  public String type() {
    return "rabbitmq";
  }

  @Override
  public KeySpec defaultKey() {
    return KeySpec.single("header(\"" + MESSAGE_ID_HEADER + "\")");
  }

  @Override
  public Map<String, Object> printable() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("uri", Masking.url(uri.toString()));
    m.put("queue", queue);
    m.put("prefetch", prefetch);
    m.put("consumers", consumers);
    m.put("max_attempts", maxAttempts);
    m.put("requeue_delay", Durations.format(requeueDelay));
    m.put("max_requeue_delay", Durations.format(maxRequeueDelay));
    m.put("max_body", DataSizes.format(maxBody));
    m.put("max_depth", maxDepth);
    return m;
  }

  /** Hides the password in the URI. */
  @Override
  public String toString() {
    return "RabbitMqSourceSettings" + printable();
  }
}
