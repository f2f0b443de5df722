package dev.idem.server.deliver;

import dev.idem.server.config.Masking;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes each event to a JetStream subject and counts it delivered only when the stream's
 * publish ack came back: the ack is the broker's confirmation that the message is stored. Headers:
 * {@code Idempotency-Key} and {@code Nats-Msg-Id} (the same value, so the stream's duplicate window
 * drops a republish of the same event, e.g. Idem's retry after a lost ack), {@code Content-Type},
 * {@code Idem-Pipeline}, {@code Idem-Ordering-Key} when the pipeline orders events, and the
 * delivery's own headers.
 *
 * <p>A publish ack that says duplicate counts as delivered (the stream has the event). No ack in
 * time, no stream for the subject, or a connection down: a retryable failure. The connection is
 * opened at the first delivery (so the service starts while NATS is down) and reconnects by itself.
 */
final class NatsSink implements Sink {
  private static final Logger LOG = LoggerFactory.getLogger(NatsSink.class);

  private final String url;
  private final String subject;
  private final @Nullable String stream;
  private final Duration timeout;
  private final String description;
  private final Object lock = new Object();
  private @Nullable Connection connection;
  private @Nullable JetStream js;
  private boolean closed;

  NatsSink(String url, String subject, @Nullable String stream, Duration timeout) {
    this.url = Objects.requireNonNull(url, "url");
    this.subject = Objects.requireNonNull(subject, "subject");
    this.stream = stream;
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    this.description =
        "nats:" + subject + (stream == null ? "" : "(" + stream + ")") + "@" + Masking.url(url);
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    JetStream jet;
    try {
      jet = jetStream();
    } catch (IOException e) {
      return new DeliveryOutcome.Failed("cannot connect to NATS: " + e.getMessage(), true);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new DeliveryOutcome.Failed("interrupted while connecting to NATS", true);
    }
    Headers headers = new Headers();
    for (Map.Entry<String, String> h : delivery.headers().entrySet()) {
      String lower = h.getKey().toLowerCase(Locale.ROOT);
      if (!lower.equals("idempotency-key") && !lower.equals("nats-msg-id")) {
        headers.put(h.getKey(), h.getValue());
      }
    }
    if (headers.getFirst("Content-Type") == null) {
      headers.put("Content-Type", "application/json");
    }
    headers.put("Idempotency-Key", delivery.idempotencyKey());
    headers.put("Idem-Pipeline", delivery.pipeline());
    if (delivery.orderingKey() != null) {
      headers.put("Idem-Ordering-Key", delivery.orderingKey());
    }
    PublishOptions.Builder options =
        PublishOptions.builder().messageId(delivery.idempotencyKey()).streamTimeout(timeout);
    if (stream != null) {
      options.expectedStream(stream);
    }
    try {
      PublishAck ack = jet.publish(subject, headers, delivery.body(), options.build());
      if (ack.isDuplicate() && LOG.isDebugEnabled()) {
        LOG.debug(
            "nats sink: {} was already in stream {} (seq {})",
            delivery.idempotencyKey(),
            ack.getStream(),
            ack.getSeqno());
      }
      return new DeliveryOutcome.Delivered(0, null, null);
    } catch (JetStreamApiException e) {
      // e.g. a wrong expected stream (10060): the stream exists but is not the one configured.
      return new DeliveryOutcome.Failed(
          "JetStream refused the publish to " + subject + ": " + e.getMessage(), true);
    } catch (IOException e) {
      // No ack in time, no stream for the subject (no responders), connection down.
      return new DeliveryOutcome.Failed(
          "no JetStream publish ack for " + subject + ": " + e.getMessage(), true);
    } catch (RuntimeException e) {
      return new DeliveryOutcome.Failed(
          "publish to " + subject + " failed: " + e.getClass().getSimpleName(), true);
    }
  }

  private JetStream jetStream() throws IOException, InterruptedException {
    synchronized (lock) {
      if (closed) {
        throw new IOException("the sink is closed");
      }
      JetStream j = js;
      if (j != null) {
        return j;
      }
      Options options =
          new Options.Builder()
              .servers(url.split(","))
              .connectionName("idem-sink")
              .connectionTimeout(timeout)
              .maxReconnects(-1)
              .errorListener(new io.nats.client.ErrorListener() {})
              .build();
      Connection c = Nats.connect(options);
      try {
        j = c.jetStream(JetStreamOptions.builder().requestTimeout(timeout).build());
      } catch (IOException | RuntimeException e) {
        c.close();
        throw e;
      }
      connection = c;
      js = j;
      return j;
    }
  }

  @Override
  public String describe() {
    return description;
  }

  @Override
  public void close() {
    Connection c;
    synchronized (lock) {
      closed = true;
      c = connection;
      connection = null;
      js = null;
    }
    if (c != null) {
      try {
        c.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        LOG.warn("nats sink {}: closing the connection failed: {}", description, e.toString());
      }
    }
  }
}
