package dev.idem.server;

import dev.idem.TimeSource;
import dev.idem.server.config.SinkSettings;
import dev.idem.server.config.StoreFaults;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryCodec;
import dev.idem.server.deliver.DeliveryListener;
import dev.idem.server.deliver.HttpSinkSettings;
import dev.idem.server.deliver.JdbcSinkSettings;
import dev.idem.server.deliver.OutboxDispatcher;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.deliver.Sink;
import dev.idem.server.deliver.Sinks;
import dev.idem.server.deliver.SyncDeliverer;
import dev.idem.server.pipeline.Deliverer;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.signature.SignatureVerifiers;
import dev.idem.server.transform.Transform;
import dev.idem.server.transform.Transforms;
import dev.idem.spi.OutboxStore;
import java.time.Duration;

/**
 * The service's edge parts: {@link SignatureVerifiers}, jq {@link Transforms}, the {@link Sinks},
 * {@link SyncDeliverer} for sync mode, {@link OutboxDispatcher} for async mode, and {@link
 * DeliveryCodec} for outbox payloads.
 */
public final class DefaultEdge implements Edge {

  /** Creates the default edge. */
  public DefaultEdge() {}

  @Override
  public SignatureVerifier verifier(SignatureSettings settings, TimeSource time) {
    return SignatureVerifiers.create(settings, time);
  }

  @Override
  public Transform transform(String program) {
    return Transforms.jq(program);
  }

  @Override
  public Sink sink(String pipeline, SinkSettings settings) {
    if (settings instanceof SinkSettings.Http h) {
      return Sinks.http(new HttpSinkSettings(h.url(), h.headers(), h.timeout()));
    }
    if (settings instanceof SinkSettings.File f) {
      return Sinks.file(f.path());
    }
    if (settings instanceof SinkSettings.Jdbc j) {
      return Sinks.jdbc(new JdbcSinkSettings(j.url(), j.table(), j.username(), j.password()));
    }
    if (settings instanceof SinkSettings.Nats n) {
      return Sinks.nats(n.url(), n.subject(), n.stream(), n.timeout());
    }
    if (settings instanceof SinkSettings.Kafka k) {
      return Sinks.kafka(k);
    }
    if (settings instanceof SinkSettings.RabbitMq q) {
      return Sinks.rabbitmq(q.uri(), q.exchange(), q.routingKey(), q.timeout());
    }
    return Sinks.stdout();
  }

  @Override
  public Deliverer deliverer(Sink sink, RetryPolicy retry, DeliveryListener listener) {
    return new SyncDeliverer(sink, retry, listener)::deliver;
  }

  @Override
  public Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener) {
    return dispatcher(pipeline, outbox, sink, retry, listener, StoreFaults.DEFAULT_CLAIM_TIMEOUT);
  }

  @Override
  public Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener,
      Duration claimTimeout) {
    return dispatcher(pipeline, outbox, sink, retry, listener, claimTimeout, false);
  }

  @Override
  public Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener,
      Duration claimTimeout,
      boolean blockOnFailure) {
    OutboxDispatcher d =
        OutboxDispatcher.builder(pipeline, outbox, sink)
            .retryPolicy(retry)
            .listener(listener)
            .decoder(DeliveryCodec::decode)
            .claimTimeout(claimTimeout)
            .blockOnFailure(blockOnFailure)
            .start();
    return new Dispatcher() {
      @Override
      public void wakeUp() {
        d.wakeUp();
      }

      @Override
      public void close() {
        d.close();
      }

      @Override
      public String toString() {
        return d.toString();
      }
    };
  }

  @Override
  public byte[] encode(Delivery delivery) {
    return DeliveryCodec.encode(delivery);
  }

  @Override
  public Delivery decode(byte[] payload) {
    return DeliveryCodec.decode(payload);
  }
}
