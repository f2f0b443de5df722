package dev.idem.server.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The YAML binding layer: mutable classes that mirror the file's structure field for field (YAML
 * {@code snake_case} names map to these camelCase fields). They hold what was written, unvalidated;
 * {@link ConfigConverter} turns them into {@link IdemConfig}. Not for use outside config loading.
 */
public final class IdemProperties {
  /** Creates an empty binding target (Jackson fills it). */
  public IdemProperties() {}

  /** {@code server}. */
  public @Nullable ServerProperties server;

  /** {@code store}. */
  public @Nullable StoreProperties store;

  /** {@code pipelines}. */
  public @Nullable List<PipelineProperties> pipelines;

  /** {@code server}: the HTTP listener and the admin API. */
  public static final class ServerProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public ServerProperties() {}

    /** {@code host}. */
    public @Nullable String host;

    /** {@code port}. */
    public @Nullable Integer port;

    /** {@code admin_token}. */
    public @Nullable String adminToken;

    /** {@code max_threads}. */
    public @Nullable Integer maxThreads;

    /** {@code shutdown_timeout}. */
    public @Nullable String shutdownTimeout;

    /** {@code log_level}. */
    public @Nullable String logLevel;

    /** {@code read_timeout}. */
    public @Nullable String readTimeout;

    /** {@code min_data_rate} (bytes per second, e.g. {@code 1KiB}). */
    public @Nullable String minDataRate;

    /** {@code idle_timeout}. */
    public @Nullable String idleTimeout;

    /** {@code max_header_size}. */
    public @Nullable String maxHeaderSize;

    /** {@code management_port}. */
    public @Nullable Integer managementPort;

    /** {@code tls}. */
    public @Nullable TlsProperties tls;
  }

  /** {@code server.tls}: TLS on the listener, and the CAs of client certificates. */
  public static final class TlsProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public TlsProperties() {}

    /** {@code certificate}. */
    public @Nullable String certificate;

    /** {@code private_key}. */
    public @Nullable String privateKey;

    /** {@code keystore}. */
    public @Nullable String keystore;

    /** {@code keystore_password}. */
    public @Nullable String keystorePassword;

    /** {@code client_ca}. */
    public @Nullable String clientCa;

    /** {@code reload_interval}. */
    public @Nullable String reloadInterval;
  }

  /** {@code store} and {@code dedup.store}: where keys (and the outbox) are kept. */
  public static final class StoreProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public StoreProperties() {}

    /** {@code type}. */
    public @Nullable String type;

    /** {@code path} (rocksdb). */
    public @Nullable String path;

    /** {@code durability} (rocksdb). */
    public @Nullable String durability;

    /** {@code url} (redis, jdbc). */
    public @Nullable String url;

    /** {@code prefix} (redis). */
    public @Nullable String prefix;

    /** {@code username} (jdbc). */
    public @Nullable String username;

    /** {@code password} (jdbc). */
    public @Nullable String password;

    /** {@code max_keys} (memory: the default bound per pipeline). */
    public @Nullable Long maxKeys;

    /** {@code timeout} (redis, jdbc: the bound on one command or statement). */
    public @Nullable String timeout;

    /** {@code reconnect_delay} (redis). */
    public @Nullable String reconnectDelay;

    /** {@code require_durable} (redis). */
    public @Nullable Boolean requireDurable;

    /** {@code fail_fast} (redis, jdbc: fail the start when the store cannot be reached). */
    public @Nullable Boolean failFast;

    /** {@code claim_timeout} (every store: how long an outbox claim hides an entry). */
    public @Nullable String claimTimeout;

    /** {@code instance_id} (jdbc: this instance's stable identity among those sharing tables). */
    public @Nullable String instanceId;

    /**
     * {@code layout} (redis: {@code standard} or {@code compact}; jdbc: {@code standard} or {@code
     * partitioned}).
     */
    public @Nullable String layout;

    /**
     * {@code compact_shards} (redis with {@code layout: compact}: hashes per pipeline, about its
     * live keys / 25).
     */
    public @Nullable Integer compactShards;
  }

  /** One entry of {@code pipelines}. */
  public static final class PipelineProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public PipelineProperties() {}

    /** {@code id}. */
    public @Nullable String id;

    /** {@code source}. */
    public @Nullable SourceProperties source;

    /** {@code dedup}. */
    public @Nullable DedupProperties dedup;

    /** {@code ordering}. */
    public @Nullable OrderingProperties ordering;

    /** {@code transform}. */
    public @Nullable TransformProperties transform;

    /** {@code deliver}. */
    public @Nullable DeliverProperties deliver;

    /** {@code tenant}. */
    public @Nullable String tenant;
  }

  /** {@code source}: where events come from. */
  public static final class SourceProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public SourceProperties() {}

    /** {@code webhook}. */
    public @Nullable WebhookProperties webhook;

    /** {@code nats}. */
    public @Nullable NatsSourceProperties nats;

    /** {@code rabbitmq}. */
    public @Nullable RabbitMqProperties rabbitmq;

    /** {@code kafka}. */
    public @Nullable KafkaProperties kafka;
  }

  /** {@code source.kafka}. */
  public static final class KafkaProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public KafkaProperties() {}

    /** {@code bootstrap}. */
    public @Nullable String bootstrap;

    /** {@code topics}. */
    public @Nullable List<String> topics;

    /** {@code group}. */
    public @Nullable String group;

    /** {@code max_poll_records}. */
    public @Nullable Integer maxPollRecords;

    /** {@code on_bad_record}: dead_letter or log_and_skip. */
    public @Nullable String onBadRecord;

    /** {@code dead_letter_topic}. */
    public @Nullable String deadLetterTopic;

    /** {@code max_attempts}. */
    public @Nullable Integer maxAttempts;

    /** {@code backoff}. */
    public @Nullable String backoff;

    /** {@code max_backoff}. */
    public @Nullable String maxBackoff;

    /** {@code max_body}. */
    public @Nullable String maxBody;

    /** {@code max_depth}. */
    public @Nullable Integer maxDepth;

    /** {@code properties}: further Kafka client settings. */
    public @Nullable Map<String, String> properties;

    /** {@code state}: the partitioned local dedup state. */
    public @Nullable KafkaStateProperties state;
  }

  /** {@code source.kafka.state}. */
  public static final class KafkaStateProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public KafkaStateProperties() {}

    /** {@code dir}. */
    public @Nullable String dir;

    /** {@code changelog_topic}. */
    public @Nullable String changelogTopic;

    /** {@code replication_factor}. */
    public @Nullable Integer replicationFactor;
  }

  /** {@code source.rabbitmq}. */
  public static final class RabbitMqProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public RabbitMqProperties() {}

    /** {@code uri}. */
    public @Nullable String uri;

    /** {@code queue}. */
    public @Nullable String queue;

    /** {@code prefetch}. */
    public @Nullable Integer prefetch;

    /** {@code consumers}. */
    public @Nullable Integer consumers;

    /** {@code max_attempts}. */
    public @Nullable Integer maxAttempts;

    /** {@code requeue_delay}. */
    public @Nullable String requeueDelay;

    /** {@code max_requeue_delay}. */
    public @Nullable String maxRequeueDelay;

    /** {@code max_body}. */
    public @Nullable String maxBody;

    /** {@code max_depth}. */
    public @Nullable Integer maxDepth;
  }

  /** {@code source.nats}. */
  public static final class NatsSourceProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public NatsSourceProperties() {}

    /** {@code url}. */
    public @Nullable String url;

    /** {@code stream}. */
    public @Nullable String stream;

    /** {@code durable}. */
    public @Nullable String durable;

    /** {@code subject}. */
    public @Nullable String subject;

    /** {@code batch}. */
    public @Nullable Integer batch;

    /** {@code ack_wait}. */
    public @Nullable String ackWait;

    /** {@code max_deliver}. */
    public @Nullable Long maxDeliver;

    /** {@code max_attempts}. */
    public @Nullable Integer maxAttempts;

    /** {@code dead_letter}: a subject. */
    public @Nullable String deadLetter;

    /** {@code backoff}. */
    public @Nullable String backoff;

    /** {@code max_backoff}. */
    public @Nullable String maxBackoff;

    /** {@code max_body}. */
    public @Nullable String maxBody;

    /** {@code max_depth}. */
    public @Nullable Integer maxDepth;
  }

  /** {@code source.webhook}. */
  public static final class WebhookProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public WebhookProperties() {}

    /** {@code path}. */
    public @Nullable String path;

    /** {@code max_body}. */
    public @Nullable String maxBody;

    /** {@code max_depth}. */
    public @Nullable Integer maxDepth;

    /** {@code signature}. */
    public @Nullable SignatureProperties signature;

    /** {@code auth}: caller authentication. */
    public @Nullable AuthProperties auth;
  }

  /** {@code source.webhook.auth}. */
  public static final class AuthProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public AuthProperties() {}

    /** {@code jwt}. */
    public @Nullable JwtProperties jwt;

    /** {@code mtls}. */
    public @Nullable MtlsProperties mtls;

    /** {@code principal_header}. */
    public @Nullable String principalHeader;
  }

  /** {@code source.webhook.auth.mtls}. */
  public static final class MtlsProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public MtlsProperties() {}

    /** {@code ca}. */
    public @Nullable String ca;
  }

  /** {@code source.webhook.auth.jwt}. */
  public static final class JwtProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public JwtProperties() {}

    /** {@code issuer}. */
    public @Nullable String issuer;

    /** {@code audience}. */
    public @Nullable String audience;

    /** {@code jwks_url}. */
    public @Nullable String jwksUrl;

    /** {@code public_key}: a PEM file. */
    public @Nullable String publicKey;

    /** {@code secret}. */
    public @Nullable String secret;

    /** {@code algorithms}. */
    public @Nullable List<String> algorithms;

    /** {@code leeway}. */
    public @Nullable String leeway;

    /** {@code max_delegation_depth}. */
    public @Nullable Integer maxDelegationDepth;
  }

  /** {@code source.webhook.signature}. */
  public static final class SignatureProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public SignatureProperties() {}

    /** {@code scheme}. */
    public @Nullable String scheme;

    /** {@code secret}. */
    public @Nullable String secret;

    /** {@code secrets}: several secrets, any one verifies (a secret roll). */
    public @Nullable List<String> secrets;

    /** {@code tolerance}. */
    public @Nullable String tolerance;
  }

  /** {@code dedup}. */
  public static final class DedupProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public DedupProperties() {}

    /** {@code key}: a string or a list of strings. */
    public @Nullable JsonNode key;

    /** {@code window}. */
    public @Nullable String window;

    /** {@code expiry}. */
    public @Nullable String expiry;

    /** {@code max_keys}. */
    public @Nullable Long maxKeys;

    /** {@code lease}. */
    public @Nullable String lease;

    /** {@code mode}. */
    public @Nullable String mode;

    /** {@code store}. */
    public @Nullable StoreProperties store;
  }

  /** {@code ordering}. */
  public static final class OrderingProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public OrderingProperties() {}

    /** {@code key}: a string or a list of strings. */
    public @Nullable JsonNode key;

    /** {@code mode}. */
    public @Nullable String mode;

    /** {@code lock_ttl}. */
    public @Nullable String lockTtl;

    /** {@code sequence}: the field path of the event's sequence number. */
    public @Nullable String sequence;

    /** {@code gap_timeout}. */
    public @Nullable String gapTimeout;

    /** {@code max_attempts}. */
    public @Nullable Integer maxAttempts;

    /** {@code on_failure}. */
    public @Nullable String onFailure;
  }

  /** {@code transform}. */
  public static final class TransformProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public TransformProperties() {}

    /** {@code jq}. */
    public @Nullable String jq;
  }

  /** {@code deliver}. */
  public static final class DeliverProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public DeliverProperties() {}

    /** {@code mode}. */
    public @Nullable String mode;

    /** {@code retries}. */
    public @Nullable Integer retries;

    /** {@code backoff}. */
    public @Nullable String backoff;

    /** {@code max_backoff}. */
    public @Nullable String maxBackoff;

    /** {@code http}. */
    public @Nullable HttpProperties http;

    /** {@code file}. */
    public @Nullable FileProperties file;

    /** {@code stdout}. */
    public @Nullable StdoutProperties stdout;

    /** {@code jdbc}. */
    public @Nullable JdbcProperties jdbc;

    /** {@code nats}. */
    public @Nullable NatsSinkProperties nats;

    /** {@code rabbitmq}. */
    public @Nullable RabbitMqSinkProperties rabbitmq;

    /** {@code kafka}. */
    public @Nullable KafkaSinkProperties kafka;
  }

  /** {@code deliver.kafka}. */
  public static final class KafkaSinkProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public KafkaSinkProperties() {}

    /** {@code bootstrap}. */
    public @Nullable String bootstrap;

    /** {@code topic}. */
    public @Nullable String topic;

    /** {@code key}: the field path of the record key. */
    public @Nullable String key;

    /** {@code timeout}. */
    public @Nullable String timeout;

    /** {@code properties}: further Kafka producer settings. */
    public @Nullable Map<String, String> properties;
  }

  /** {@code deliver.rabbitmq}. */
  public static final class RabbitMqSinkProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public RabbitMqSinkProperties() {}

    /** {@code uri}. */
    public @Nullable String uri;

    /** {@code exchange}. */
    public @Nullable String exchange;

    /** {@code routing_key}. */
    public @Nullable String routingKey;

    /** {@code timeout}. */
    public @Nullable String timeout;
  }

  /** {@code deliver.nats}. */
  public static final class NatsSinkProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public NatsSinkProperties() {}

    /** {@code url}. */
    public @Nullable String url;

    /** {@code subject}. */
    public @Nullable String subject;

    /** {@code stream}. */
    public @Nullable String stream;

    /** {@code timeout}. */
    public @Nullable String timeout;
  }

  /** {@code deliver.http}. */
  public static final class HttpProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public HttpProperties() {}

    /** {@code url}. */
    public @Nullable String url;

    /** {@code headers}. */
    public @Nullable Map<String, String> headers;

    /** {@code timeout}. */
    public @Nullable String timeout;

    /** {@code retries} (the same as {@code deliver.retries}). */
    public @Nullable Integer retries;
  }

  /** {@code deliver.file}. */
  public static final class FileProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public FileProperties() {}

    /** {@code path}. */
    public @Nullable String path;
  }

  /** {@code deliver.stdout}: no fields. */
  public static final class StdoutProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public StdoutProperties() {}
  }

  /** {@code deliver.jdbc}. */
  public static final class JdbcProperties {
    /** Creates an empty binding target (Jackson fills it). */
    public JdbcProperties() {}

    /** {@code url}. */
    public @Nullable String url;

    /** {@code table}. */
    public @Nullable String table;

    /** {@code username}. */
    public @Nullable String username;

    /** {@code password}. */
    public @Nullable String password;
  }
}
