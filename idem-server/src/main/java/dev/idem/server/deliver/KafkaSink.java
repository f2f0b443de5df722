package dev.idem.server.deliver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.IdemException;
import dev.idem.server.config.SinkSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * {@code deliver.kafka}: publishes each event to a topic with an idempotent producer ({@code
 * acks=all}, {@code enable.idempotence=true}) and waits for the broker's acknowledgement: a
 * delivery counts only once every in-sync replica has the record. The event's idempotency key
 * travels as the record header {@code Idempotency-Key} (UTF-8), so a consumer can drop the copy a
 * retry after a lost acknowledgement publishes again. The record key is the event's {@code key}
 * field when configured, else its ordering key, else none.
 */
final class KafkaSink implements Sink {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SinkSettings.Kafka settings;
  private final KafkaProducer<byte[], byte[]> producer;
  private final String @Nullable [] keyPath;

  KafkaSink(SinkSettings.Kafka settings) {
    this.settings = settings;
    this.keyPath = settings.key() == null ? null : settings.key().split("\\.");
    Map<String, Object> c = new HashMap<>(settings.properties());
    c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap());
    c.put(ProducerConfig.ACKS_CONFIG, "all");
    c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    int timeoutMs = (int) Math.min(Integer.MAX_VALUE, settings.timeout().toMillis());
    // The producer's own retries stay within one attempt's timeout; Idem's retries are the rest.
    c.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(timeoutMs, 30_000));
    c.put(
        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
        Math.max(timeoutMs, (int) c.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG) + 5));
    c.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
    c.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeoutMs);
    try {
      this.producer = new KafkaProducer<>(c);
    } catch (KafkaException e) {
      throw new IdemException("deliver.kafka: cannot start the producer: " + e.getMessage(), e);
    }
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    byte[] key;
    try {
      key = recordKey(delivery);
    } catch (IOException e) {
      return new DeliveryOutcome.Failed(
          "the event is not JSON, so its key field cannot be read: " + e.getMessage(), false, null);
    }
    if (keyPath != null && key == null) {
      return new DeliveryOutcome.Failed(
          "the event has no field " + settings.key() + " for the record key", false, null);
    }
    ProducerRecord<byte[], byte[]> record =
        new ProducerRecord<>(settings.topic(), null, key, delivery.body());
    record
        .headers()
        .add("Idempotency-Key", delivery.idempotencyKey().getBytes(StandardCharsets.UTF_8));
    delivery
        .headers()
        .forEach((k, v) -> record.headers().add(k, v.getBytes(StandardCharsets.UTF_8)));
    Duration timeout = settings.timeout();
    try {
      producer.send(record).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return new DeliveryOutcome.Delivered(0, null, null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new DeliveryOutcome.Failed("interrupted while waiting for the broker", true, null);
    } catch (TimeoutException e) {
      return new DeliveryOutcome.Failed(
          "the broker did not acknowledge within " + timeout.toMillis() + " ms", true, null);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      return new DeliveryOutcome.Failed(
          "the broker did not take the record: " + cause, retryable(cause), null);
    } catch (KafkaException e) {
      return new DeliveryOutcome.Failed("the producer failed: " + e, retryable(e), null);
    }
  }

  /** Authorization, a record too large or a bad topic will fail again; the rest may pass. */
  private static boolean retryable(Throwable t) {
    return t instanceof RetriableException
        || t instanceof org.apache.kafka.common.errors.TimeoutException
        || !(t instanceof org.apache.kafka.common.errors.ApiException);
  }

  private byte @Nullable [] recordKey(Delivery delivery) throws IOException {
    if (keyPath == null) {
      return delivery.orderingKey() == null
          ? null
          : delivery.orderingKey().getBytes(StandardCharsets.UTF_8);
    }
    JsonNode node = JSON.readTree(delivery.body());
    for (String step : keyPath) {
      if (node == null || !node.isObject()) {
        return null;
      }
      node = node.get(step);
    }
    if (node == null || node.isNull() || node.isContainerNode()) {
      return null;
    }
    return node.asText().getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public String describe() {
    return "kafka:" + settings.topic() + "@" + settings.bootstrap();
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }
}
