package dev.idem.kafka.state;

import dev.idem.IdemConfigException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of {@link PartitionedDedupState}. Immutable; make one with {@link #builder}.
 *
 * @param inputTopic the topic whose records are deduplicated (one topic per state)
 * @param changelogTopic the compacted changelog topic (created if missing, with the input's
 *     partition count); by default {@code <inputTopic>-idem-changelog}
 * @param directory the local RocksDB directory; emptied when the state opens (it is a cache)
 * @param clientConfig Kafka client settings shared by the changelog producer, the restore consumer
 *     and the admin client ({@code bootstrap.servers}, security); each client takes the keys it
 *     knows; serializers, {@code group.id}, idempotence and acks are set by the state
 * @param replicationFactor the changelog's replication factor when it is created
 */
public record PartitionedStateConfig(
    String inputTopic,
    String changelogTopic,
    Path directory,
    Map<String, Object> clientConfig,
    short replicationFactor) {

  /** Validates and copies. */
  public PartitionedStateConfig {
    Objects.requireNonNull(inputTopic, "inputTopic");
    Objects.requireNonNull(changelogTopic, "changelogTopic");
    Objects.requireNonNull(directory, "directory");
    clientConfig = Map.copyOf(clientConfig);
    if (changelogTopic.equals(inputTopic)) {
      throw new IdemConfigException(
          "the changelog topic must not be the input topic " + inputTopic + "; pick another name");
    }
    if (!clientConfig.containsKey("bootstrap.servers")) {
      throw new IdemConfigException(
          "clientConfig needs bootstrap.servers (the Kafka cluster of " + inputTopic + ")");
    }
    if (replicationFactor < 1) {
      throw new IdemConfigException(
          "replicationFactor must be at least 1, got " + replicationFactor);
    }
  }

  /**
   * Starts a builder.
   *
   * @param inputTopic the input topic
   * @param directory the local state directory (emptied when the state opens)
   * @param clientConfig Kafka client settings, at least {@code bootstrap.servers}
   * @return a builder
   */
  public static Builder builder(
      String inputTopic, Path directory, Map<String, Object> clientConfig) {
    return new Builder(inputTopic, directory, clientConfig);
  }

  /** Builds a {@link PartitionedStateConfig}. Not thread-safe. */
  public static final class Builder {
    private final String inputTopic;
    private final Path directory;
    private final Map<String, Object> clientConfig;
    private String changelogTopic;
    private short replicationFactor = 3;

    private Builder(String inputTopic, Path directory, Map<String, Object> clientConfig) {
      this.inputTopic = Objects.requireNonNull(inputTopic, "inputTopic");
      this.directory = Objects.requireNonNull(directory, "directory");
      this.clientConfig = new HashMap<>(clientConfig);
      this.changelogTopic = inputTopic + "-idem-changelog";
    }

    /**
     * Sets the changelog topic (default {@code <inputTopic>-idem-changelog}). Use one changelog per
     * consumer group and input topic.
     *
     * @param topic the topic
     * @return this builder
     */
    public Builder changelogTopic(String topic) {
      this.changelogTopic = Objects.requireNonNull(topic, "topic");
      return this;
    }

    /**
     * Sets the replication factor the changelog is created with (default 3; 1 for a one-broker test
     * cluster).
     *
     * @param factor the factor
     * @return this builder
     */
    public Builder replicationFactor(int factor) {
      this.replicationFactor = (short) factor;
      return this;
    }

    /**
     * Returns the config.
     *
     * @return the settings
     * @throws IdemConfigException if a setting is invalid
     */
    public PartitionedStateConfig build() {
      return new PartitionedStateConfig(
          inputTopic, changelogTopic, directory, clientConfig, replicationFactor);
    }
  }
}
