package dev.idem.server.deliver;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.IdemConfigException;
import dev.idem.server.config.Masking;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes each event to a RabbitMQ exchange: persistent (delivery mode 2), {@code mandatory} (an
 * unroutable message is a failure, not a silent drop), {@code message_id} and the header {@code
 * Idempotency-Key} set to the event's idempotency key, and confirmed by the broker (publisher
 * confirms) before the delivery counts. A nack, a return, a timeout or a lost connection is a
 * retryable failure. Opens its connection on the first delivery (the service starts while the
 * broker is down) and keeps one confirm-mode channel per concurrent caller.
 */
final class RabbitMqSink implements Sink {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqSink.class);

  private final URI uri;
  private final String exchange;
  private final String routingKey;
  private final Duration timeout;
  private final ConnectionFactory factory;
  private final ConcurrentLinkedDeque<Pooled> idle = new ConcurrentLinkedDeque<>();
  private final Object connecting = new Object();
  private volatile @Nullable Connection connection;
  private volatile boolean closed;

  /** A confirm-mode channel and what the broker returned on it during the current publish. */
  private static final class Pooled {
    final Channel channel;
    volatile @Nullable String returned;

    Pooled(Channel channel) {
      this.channel = channel;
    }
  }

  RabbitMqSink(URI uri, String exchange, String routingKey, Duration timeout) {
    this.uri = Objects.requireNonNull(uri, "uri");
    this.exchange = Objects.requireNonNull(exchange, "exchange");
    this.routingKey = Objects.requireNonNull(routingKey, "routingKey");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    this.factory = new ConnectionFactory();
    try {
      factory.setUri(uri);
      factory.setVirtualHost(dev.idem.server.config.RabbitMqSourceSettings.virtualHost(uri));
    } catch (Exception e) {
      throw new IdemConfigException(
          "deliver.rabbitmq.uri: '" + Masking.url(uri.toString()) + "' is not usable: " + e);
    }
    factory.setAutomaticRecoveryEnabled(true);
    factory.setConnectionTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    Pooled p;
    try {
      p = borrow();
    } catch (IOException | TimeoutException | RuntimeException e) {
      return new DeliveryOutcome.Failed(
          "RabbitMQ at " + Masking.url(uri.toString()) + " is not reachable: " + e.getMessage(),
          true);
    }
    boolean reusable = false;
    try {
      p.returned = null;
      p.channel.basicPublish(exchange, routingKey, true, properties(delivery), delivery.body());
      boolean acked = p.channel.waitForConfirms(Math.max(1, timeout.toMillis()));
      reusable = true;
      String returned = p.returned;
      if (returned != null) {
        return new DeliveryOutcome.Failed(
            "RabbitMQ returned the message as unroutable ("
                + returned
                + "): bind a queue to exchange '"
                + exchange
                + "' for routing key '"
                + routingKey
                + "'",
            true);
      }
      if (!acked) {
        return new DeliveryOutcome.Failed("RabbitMQ nacked the message (publisher confirm)", true);
      }
      return new DeliveryOutcome.Delivered(0, null, null);
    } catch (TimeoutException e) {
      return new DeliveryOutcome.Failed(
          "RabbitMQ did not confirm the message within " + timeout.toMillis() + " ms", true);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new DeliveryOutcome.Failed("interrupted while waiting for RabbitMQ's confirm", true);
    } catch (IOException | RuntimeException e) {
      return new DeliveryOutcome.Failed("publishing to RabbitMQ failed: " + e.getMessage(), true);
    } finally {
      if (reusable && !closed && p.channel.isOpen()) {
        idle.push(p);
      } else {
        closeQuietly(p.channel);
      }
    }
  }

  private static AMQP.BasicProperties properties(Delivery delivery) {
    Map<String, Object> headers = new HashMap<>();
    String contentType = "application/json";
    for (Map.Entry<String, String> h : delivery.headers().entrySet()) {
      if (h.getKey().toLowerCase(Locale.ROOT).equals("content-type")) {
        contentType = h.getValue();
      } else {
        headers.put(h.getKey(), h.getValue());
      }
    }
    headers.put("Idempotency-Key", delivery.idempotencyKey());
    if (delivery.orderingKey() != null) {
      headers.put("Idem-Ordering-Key", delivery.orderingKey());
    }
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(2)
        .contentType(contentType)
        .messageId(delivery.idempotencyKey())
        .headers(headers)
        .build();
  }

  private Pooled borrow() throws IOException, TimeoutException {
    Pooled p;
    while ((p = idle.poll()) != null) {
      if (p.channel.isOpen()) {
        return p;
      }
    }
    Channel channel = connection().createChannel();
    if (channel == null) {
      throw new IOException("the broker has no channel left on this connection");
    }
    channel.confirmSelect();
    Pooled fresh = new Pooled(channel);
    channel.addReturnListener(r -> fresh.returned = r.getReplyCode() + " " + r.getReplyText());
    return fresh;
  }

  private Connection connection() throws IOException, TimeoutException {
    Connection c = connection;
    if (c != null) {
      return c;
    }
    synchronized (connecting) {
      if (closed) {
        throw new IOException("the sink is closed");
      }
      c = connection;
      if (c == null) {
        c = factory.newConnection("idem-sink");
        connection = c;
        LOG.info("rabbitmq sink connected to {}", Masking.url(uri.toString()));
      }
      return c;
    }
  }

  private static void closeQuietly(Channel channel) {
    try {
      if (channel.isOpen()) {
        channel.close();
      }
    } catch (IOException | TimeoutException | RuntimeException e) {
      // the channel is gone either way
    }
  }

  @Override
  public String describe() {
    return "rabbitmq:"
        + Masking.url(uri.toString())
        + " exchange="
        + exchange
        + " key="
        + routingKey;
  }

  @Override
  public void close() {
    synchronized (connecting) {
      closed = true;
      Pooled p;
      while ((p = idle.poll()) != null) {
        closeQuietly(p.channel);
      }
      Connection c = connection;
      connection = null;
      if (c != null) {
        try {
          c.close(5_000);
        } catch (IOException | RuntimeException e) {
          // closing: nothing left to do
        }
      }
    }
  }
}
