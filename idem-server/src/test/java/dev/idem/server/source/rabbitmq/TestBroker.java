package dev.idem.server.source.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.tck.ExternalService;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The shared RabbitMQ (IDEM_RABBITMQ_URI, default amqp://guest:guest@127.0.0.1:5672/), with queues
 * and exchanges of this test only, uniquely named and deleted on close. Skips the test when the
 * broker is down (fails it under CI=true).
 */
final class TestBroker implements AutoCloseable {
  static final String DEFAULT_URI = "amqp://guest:guest@127.0.0.1:5672/";

  final URI uri;
  final Connection connection;
  final Channel channel;
  private final List<String> queues = new ArrayList<>();
  private final List<String> exchanges = new ArrayList<>();

  private TestBroker(URI uri) throws Exception {
    this.uri = uri;
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    f.setVirtualHost(dev.idem.server.config.RabbitMqSourceSettings.virtualHost(uri));
    connection = f.newConnection("idem-test");
    channel = connection.createChannel();
    channel.confirmSelect();
  }

  static TestBroker require() throws Exception {
    ExternalService s =
        ExternalService.require(
            "RabbitMQ",
            "IDEM_RABBITMQ_URI",
            DEFAULT_URI,
            5672,
            "e.g. systemctl start rabbitmq-server, or docker run -p 5672:5672 rabbitmq:4");
    return new TestBroker(URI.create(s.url()));
  }

  /** A unique name with this prefix. */
  static String unique(String prefix) {
    return "idem-test-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * Declares a queue whose dead-letter exchange routes to a dead-letter queue.
   *
   * @return {queue, dead-letter queue}
   */
  String[] queueWithDeadLetters(String prefix) throws Exception {
    String q = unique(prefix);
    String dlx = q + ".dlx";
    String dlq = q + ".dead";
    channel.exchangeDeclare(dlx, BuiltinExchangeType.FANOUT, false, false, null);
    exchanges.add(dlx);
    channel.queueDeclare(dlq, false, false, false, null);
    queues.add(dlq);
    channel.queueBind(dlq, dlx, "");
    channel.queueDeclare(q, false, false, false, Map.of("x-dead-letter-exchange", dlx));
    queues.add(q);
    return new String[] {q, dlq};
  }

  /** Declares a plain queue. */
  String queue(String prefix) throws Exception {
    String q = unique(prefix);
    channel.queueDeclare(q, false, false, false, null);
    queues.add(q);
    return q;
  }

  /** Declares an exchange (deleted on close). */
  String exchange(String prefix) throws Exception {
    String x = unique(prefix);
    channel.exchangeDeclare(x, BuiltinExchangeType.DIRECT, false, false, null);
    exchanges.add(x);
    return x;
  }

  /** Publishes a message to a queue (default exchange), confirmed in the next {@link #confirm}. */
  void publish(String queue, String messageId, String body) throws Exception {
    publish(queue, messageId, Map.of(), body);
  }

  void publish(String queue, String messageId, Map<String, Object> headers, String body)
      throws Exception {
    AMQP.BasicProperties props =
        new AMQP.BasicProperties.Builder()
            .messageId(messageId)
            .headers(headers.isEmpty() ? null : headers)
            .deliveryMode(2)
            .build();
    channel.basicPublish("", queue, props, body.getBytes(StandardCharsets.UTF_8));
  }

  /** Waits for the broker's confirms of everything published. */
  void confirm() throws Exception {
    channel.waitForConfirmsOrDie(30_000);
  }

  /** The ready messages of a queue (unacknowledged ones excluded). */
  long ready(String queue) throws Exception {
    return channel.queueDeclarePassive(queue).getMessageCount();
  }

  /** Takes every message of a queue (acknowledged). */
  List<GetResponse> drain(String queue) throws Exception {
    List<GetResponse> out = new ArrayList<>();
    GetResponse r;
    while ((r = channel.basicGet(queue, true)) != null) {
      out.add(r);
    }
    return out;
  }

  @Override
  public void close() throws Exception {
    try (Channel c = connection.createChannel()) {
      for (String q : queues) {
        c.queueDelete(q);
      }
      for (String x : exchanges) {
        c.exchangeDelete(x);
      }
    } finally {
      connection.close();
    }
  }
}
