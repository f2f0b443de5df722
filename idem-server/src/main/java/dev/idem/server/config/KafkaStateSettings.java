package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * {@code source.kafka.state}: the pipeline's dedup keys live next to the consumer, partitioned like
 * the topic (the Kafka Streams model): each instance keeps the keys of the partitions it owns in a
 * local RocksDB under {@code dir}, writes every change to a compacted changelog topic, and restores
 * a newly assigned partition from it before it reads that partition's records. No shared store.
 *
 * @param dir the local state directory of this instance (a cache rebuilt from the changelog; it is
 *     emptied at start, so give each instance its own, never a directory with other files)
 * @param changelogTopic the changelog topic, or null for {@code <group>-<topic>-idem-changelog};
 *     created (compacted, with the input topic's partition count) if missing
 * @param replicationFactor the changelog's replication factor when it is created
 */
public record KafkaStateSettings(Path dir, @Nullable String changelogTopic, int replicationFactor) {

  /** The default replication factor of a changelog the service creates: 3. */
  public static final int DEFAULT_REPLICATION_FACTOR = 3;

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public KafkaStateSettings {
    Objects.requireNonNull(dir, "dir");
    if (dir.toString().isBlank()) {
      throw new IdemConfigException(
          "dir is required: this instance's local state directory (e.g. dir: /var/lib/idem/state)");
    }
    if (changelogTopic != null && changelogTopic.isBlank()) {
      throw new IdemConfigException(
          "changelog_topic is blank; name a topic or remove it for <group>-<topic>-idem-changelog");
    }
    if (replicationFactor < 1 || replicationFactor > Short.MAX_VALUE) {
      throw new IdemConfigException(
          "replication_factor must be at least 1 (1 for a one-broker cluster), got "
              + replicationFactor);
    }
  }

  /**
   * Returns the changelog topic of a group and input topic: the one given, else {@code
   * <group>-<topic>-idem-changelog} (one changelog per consumer group and topic, as Kafka Streams
   * names its changelogs after the application id).
   *
   * @param group the consumer group
   * @param topic the input topic
   * @return the topic name
   */
  public String changelogFor(String group, String topic) {
    return changelogTopic != null ? changelogTopic : group + "-" + topic + "-idem-changelog";
  }

  /**
   * Returns the settings as {@code idem check-config} prints them.
   *
   * @return field name to value
   */
  public Map<String, Object> printable() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("dir", dir.toString());
    if (changelogTopic != null) {
      m.put("changelog_topic", changelogTopic);
    }
    m.put("replication_factor", replicationFactor);
    return m;
  }
}
