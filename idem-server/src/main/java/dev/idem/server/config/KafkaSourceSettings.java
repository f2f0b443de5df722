package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * A Kafka source ({@code source.kafka}): a consumer group whose records are the pipeline's events.
 * An offset is committed only once every record before it in its partition is settled.
 *
 * @param bootstrap the brokers, {@code host:port[,host:port...]}
 * @param topics the topics to consume, at least one
 * @param group the consumer group id
 * @param maxPollRecords the most records one poll returns (one batch reserve per partition)
 * @param onBadRecord what happens to a record that cannot be parsed or keyed
 * @param deadLetterTopic where bad records go with {@link BadRecord#DEAD_LETTER}, else null
 * @param maxAttempts how many times a record whose delivery or transform failed is tried before it
 *     is treated as a bad record
 * @param backoff the first wait before a record is tried again (in flight, store unavailable,
 *     failed); doubled per attempt
 * @param maxBackoff the longest wait between two tries
 * @param maxBody the largest record value accepted, in bytes
 * @param maxDepth the deepest JSON nesting accepted
 * @param properties further Kafka consumer (and dead-letter producer) settings, e.g. {@code
 *     security.protocol}; they cannot override the settings the source depends on
 * @param state the partitioned local dedup state ({@code state}), or null for the pipeline's store
 */
public record KafkaSourceSettings(
    String bootstrap,
    List<String> topics,
    String group,
    int maxPollRecords,
    BadRecord onBadRecord,
    @Nullable String deadLetterTopic,
    int maxAttempts,
    Duration backoff,
    Duration maxBackoff,
    long maxBody,
    int maxDepth,
    Map<String, String> properties,
    @Nullable KafkaStateSettings state)
    implements SourceSettings {

  /** The default poll size: 500 records (Kafka's own default). */
  public static final int DEFAULT_MAX_POLL_RECORDS = 500;

  /** The default attempts of a failing record: 5. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** The default first wait before a retry: 200 ms. */
  public static final Duration DEFAULT_BACKOFF = Duration.ofMillis(200);

  /** The default longest wait between retries: 10 s. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(10);

  /** The longest wait between retries that can be set: 5 minutes. */
  public static final Duration MAX_MAX_BACKOFF = Duration.ofMinutes(5);

  /**
   * Consumer settings the source owns: offsets are committed by the source, records are read as
   * bytes.
   */
  public static final List<String> RESERVED_PROPERTIES =
      List.of(
          "bootstrap.servers",
          "group.id",
          "enable.auto.commit",
          "max.poll.records",
          "key.deserializer",
          "value.deserializer",
          "key.serializer",
          "value.serializer",
          "acks",
          "enable.idempotence");

  /** What the source does with a record that cannot be parsed or keyed. */
  public enum BadRecord implements ConfigName {
    /** Publish it to {@code dead_letter_topic} with the reason in headers, then commit past it. */
    DEAD_LETTER,
    /** Log it (topic, partition, offset, reason) and commit past it. */
    LOG_AND_SKIP;

    @Override
    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public KafkaSourceSettings {
    Objects.requireNonNull(bootstrap, "bootstrap");
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(onBadRecord, "onBadRecord");
    Objects.requireNonNull(backoff, "backoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    topics = List.copyOf(topics);
    properties = Map.copyOf(properties);
    if (bootstrap.isBlank()) {
      throw new IdemConfigException("bootstrap is required (e.g. bootstrap: 127.0.0.1:9092)");
    }
    if (topics.isEmpty() || topics.stream().anyMatch(String::isBlank)) {
      throw new IdemConfigException("topics must name at least one topic (e.g. topics: [orders])");
    }
    if (group.isBlank()) {
      throw new IdemConfigException("group is required: the consumer group id (e.g. ingest)");
    }
    if (maxPollRecords < 1 || maxPollRecords > 10_000) {
      throw new IdemConfigException(
          "max_poll_records must be from 1 to 10000, got " + maxPollRecords);
    }
    if (onBadRecord == BadRecord.DEAD_LETTER
        && (deadLetterTopic == null || deadLetterTopic.isBlank())) {
      throw new IdemConfigException(
          "dead_letter_topic is required with on_bad_record: dead_letter; name a topic, or set"
              + " on_bad_record: log_and_skip");
    }
    if (deadLetterTopic != null && topics.contains(deadLetterTopic)) {
      throw new IdemConfigException(
          "dead_letter_topic '" + deadLetterTopic + "' is also consumed; use another topic");
    }
    if (maxAttempts < 1 || maxAttempts > 100) {
      throw new IdemConfigException("max_attempts must be from 1 to 100, got " + maxAttempts);
    }
    if (backoff.isNegative() || backoff.isZero() || maxBackoff.compareTo(backoff) < 0) {
      throw new IdemConfigException(
          "backoff must be positive and at most max_backoff, got "
              + Durations.format(backoff)
              + " and "
              + Durations.format(maxBackoff));
    }
    if (maxBackoff.compareTo(MAX_MAX_BACKOFF) > 0) {
      throw new IdemConfigException(
          "max_backoff must be at most 5m, got " + Durations.format(maxBackoff));
    }
    if (maxBody < 1 || maxBody > WebhookSettings.MAX_MAX_BODY) {
      throw new IdemConfigException(
          "max_body must be from 1 byte to 64MiB, got " + DataSizes.format(maxBody));
    }
    if (maxDepth < 1 || maxDepth > MAX_MAX_DEPTH) {
      throw new IdemConfigException(
          "max_depth must be from 1 to " + MAX_MAX_DEPTH + ", got " + maxDepth);
    }
    for (String k : properties.keySet()) {
      if (RESERVED_PROPERTIES.contains(k)) {
        throw new IdemConfigException(
            "properties." + k + " is set by the source itself; remove it");
      }
    }
    if (state != null && topics.size() != 1) {
      throw new IdemConfigException(
          "state keeps the keys of one topic's partitions; consume one topic here (give each"
              + " topic its own pipeline), got "
              + topics);
    }
  }

  /**
   * Makes the settings of a source whose dedup keys live in the pipeline's store (no {@code
   * state}).
   *
   * @param bootstrap the brokers
   * @param topics the topics
   * @param group the consumer group id
   * @param maxPollRecords the most records one poll returns
   * @param onBadRecord what happens to a bad record
   * @param deadLetterTopic the dead-letter topic, or null
   * @param maxAttempts attempts of a failing record
   * @param backoff the first wait before a retry
   * @param maxBackoff the longest wait between two tries
   * @param maxBody the largest record value, in bytes
   * @param maxDepth the deepest JSON nesting
   * @param properties further Kafka client settings
   * @throws IdemConfigException naming the field
   */
  public KafkaSourceSettings(
      String bootstrap,
      List<String> topics,
      String group,
      int maxPollRecords,
      BadRecord onBadRecord,
      @Nullable String deadLetterTopic,
      int maxAttempts,
      Duration backoff,
      Duration maxBackoff,
      long maxBody,
      int maxDepth,
      Map<String, String> properties) {
    this(
        bootstrap,
        topics,
        group,
        maxPollRecords,
        onBadRecord,
        deadLetterTopic,
        maxAttempts,
        backoff,
        maxBackoff,
        maxBody,
        maxDepth,
        properties,
        null);
  }

  /**
   * Returns the changelog topic of the local state, if there is one.
   *
   * @return the topic, or null without {@code state}
   */
  public @Nullable String changelogTopic() {
    KafkaStateSettings s = state;
    return s == null ? null : s.changelogFor(group, topics.get(0));
  }

  @Override
  public String type() {
    return "kafka";
  }

  @Override
  public Map<String, Object> printable() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("bootstrap", bootstrap);
    m.put("topics", topics);
    m.put("group", group);
    m.put("max_poll_records", maxPollRecords);
    m.put("on_bad_record", onBadRecord.configName());
    if (deadLetterTopic != null) {
      m.put("dead_letter_topic", deadLetterTopic);
    }
    m.put("max_attempts", maxAttempts);
    m.put("backoff", Durations.format(backoff));
    m.put("max_backoff", Durations.format(maxBackoff));
    m.put("max_body", DataSizes.format(maxBody));
    m.put("max_depth", maxDepth);
    if (!properties.isEmpty()) {
      m.put("properties", maskedProperties(properties));
    }
    if (state != null) {
      Map<String, Object> st = state.printable();
      st.put("changelog_topic", changelogTopic());
      m.put("state", st);
    }
    return m;
  }

  /**
   * Returns client properties with the values of secret ones (passwords, JAAS configs, keys)
   * masked.
   *
   * @param properties the properties
   * @return a sorted copy, masked
   */
  public static Map<String, String> maskedProperties(Map<String, String> properties) {
    Map<String, String> shown = new TreeMap<>();
    properties.forEach(
        (k, v) -> {
          String l = k.toLowerCase(Locale.ROOT);
          boolean secret =
              l.contains("password")
                  || l.contains("jaas")
                  || l.contains("secret")
                  || l.endsWith(".key");
          shown.put(k, secret ? Masking.MASK : v);
        });
    return shown;
  }

  /** Hides secret client properties. */
  @Override
  public String toString() {
    return "KafkaSourceSettings" + printable();
  }
}
