package dev.idem.server.support;

import dev.idem.TimeSource;
import dev.idem.server.Edge;
import dev.idem.server.config.SinkSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.deliver.DeliveryListener;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.deliver.Sink;
import dev.idem.server.pipeline.Deliverer;
import dev.idem.server.signature.SignatureSettings;
import dev.idem.server.signature.SignatureVerifier;
import dev.idem.server.transform.Transform;
import dev.idem.spi.OutboxStore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An edge of test parts: every pipeline delivers to a {@link RecordingSink} (inline, with immediate
 * retries), signatures are {@link TestParts#headerVerifier()}; no transform, no async delivery.
 */
public final class TestEdge implements Edge {
  public final Map<String, RecordingSink> sinks = new ConcurrentHashMap<>();

  @Override
  public SignatureVerifier verifier(SignatureSettings settings, TimeSource time) {
    return TestParts.headerVerifier();
  }

  @Override
  public Transform transform(String program) {
    throw new UnsupportedOperationException("the test edge has no transforms");
  }

  @Override
  public Sink sink(String pipeline, SinkSettings settings) {
    return sinks.computeIfAbsent(pipeline, p -> new RecordingSink());
  }

  @Override
  public Deliverer deliverer(Sink sink, RetryPolicy retry, DeliveryListener listener) {
    return TestParts.retrying(sink, retry.retries());
  }

  @Override
  public Dispatcher dispatcher(
      String pipeline,
      OutboxStore outbox,
      Sink sink,
      RetryPolicy retry,
      DeliveryListener listener) {
    throw new UnsupportedOperationException("the test edge has no async delivery");
  }

  @Override
  public byte[] encode(Delivery delivery) {
    return delivery.body();
  }

  @Override
  public Delivery decode(byte[] payload) {
    return new Delivery("?", "?", null, payload, Map.of());
  }
}
