package dev.idem.server.source.nats;

import dev.idem.tck.ExternalService;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The shared NATS server (IDEM_NATS_URL, default nats://127.0.0.1:4222) seen by one test: every
 * stream it makes has a unique name and subject prefix and is deleted at {@link #close}; nothing
 * else on the server is touched.
 */
public final class NatsTestServer implements AutoCloseable {
  public final String url;
  public final Connection nc;
  public final JetStreamManagement jsm;

  /** A unique token for this test's names, e.g. {@code t3f9a2c1}. */
  public final String id;

  private final List<String> streams = new ArrayList<>();

  private NatsTestServer(String url) throws IOException, InterruptedException {
    this.url = url;
    this.nc = Nats.connect(new Options.Builder().server(url).connectionName("idem-test").build());
    this.jsm = nc.jetStreamManagement();
    this.id = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  }

  /** Connects, or skips (fails under CI=true) when NATS is not reachable. */
  public static NatsTestServer connect() throws Exception {
    ExternalService s =
        ExternalService.require(
            "NATS with JetStream",
            "IDEM_NATS_URL",
            "nats://127.0.0.1:4222",
            4222,
            "nats-server -js");
    return new NatsTestServer(s.url());
  }

  /** A stream name unique to this test. */
  public String name(String base) {
    return ("IDEM_" + base + "_" + id).toUpperCase(Locale.ROOT);
  }

  /** A subject unique to this test: {@code idemtest.<id>.<suffix>}. */
  public String subject(String suffix) {
    return "idemtest." + id + "." + suffix;
  }

  /** Creates a memory stream on the given subjects; deleted at close. */
  public String stream(String base, String... subjects) throws IOException, JetStreamApiException {
    String name = name(base);
    jsm.addStream(
        StreamConfiguration.builder()
            .name(name)
            .subjects(subjects)
            .storageType(StorageType.Memory)
            .build());
    streams.add(name);
    return name;
  }

  /** The consumer's state. */
  public ConsumerInfo consumer(String stream, String durable)
      throws IOException, JetStreamApiException {
    return jsm.getConsumerInfo(stream, durable);
  }

  /** Whether every message of the stream was delivered to the consumer and acked (or termed). */
  public boolean settled(String stream, String durable) throws Exception {
    ConsumerInfo c = consumer(stream, durable);
    return c.getNumPending() == 0
        && c.getNumAckPending() == 0
        && c.getAckFloor().getStreamSequence()
            == jsm.getStreamInfo(stream).getStreamState().getLastSequence();
  }

  @Override
  public void close() throws Exception {
    for (String s : streams) {
      try {
        jsm.deleteStream(s);
      } catch (JetStreamApiException | IOException e) {
        // already gone
      }
    }
    nc.close();
  }
}
