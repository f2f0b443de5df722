package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.source.nats.NatsTestServer;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The JetStream sink against the real NATS server, on a stream of its own. */
class NatsSinkTest {
  private NatsTestServer nats;

  @BeforeEach
  void connect() throws Exception {
    nats = NatsTestServer.connect();
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (nats != null) {
      nats.close();
    }
  }

  private static Delivery delivery(String key, String body) {
    return new Delivery(
        "orders", key, "cust-1", body.getBytes(StandardCharsets.UTF_8), Map.of("X-Extra", "1"));
  }

  @Test
  void publishesWithTheKeyAsIdempotencyKeyAndNatsMsgIdAndTheStreamDropsARepublish()
      throws Exception {
    String subject = nats.subject("out");
    String stream = nats.stream("OUT", subject);
    try (Sink sink = Sinks.nats(nats.url, subject, stream, Duration.ofSeconds(5))) {
      assertThat(sink.deliver(delivery("orders:aa", "{\"n\":1}")))
          .isInstanceOf(DeliveryOutcome.Delivered.class);
      // Idem's retry of the same event (e.g. after a lost ack): confirmed, stored once.
      assertThat(sink.deliver(delivery("orders:aa", "{\"n\":1}")))
          .isInstanceOf(DeliveryOutcome.Delivered.class);
      assertThat(sink.deliver(delivery("orders:bb", "{\"n\":2}")))
          .isInstanceOf(DeliveryOutcome.Delivered.class);
      assertThat(sink.describe()).contains(subject).contains(stream);
    }

    assertThat(nats.jsm.getStreamInfo(stream).getStreamState().getMsgCount()).isEqualTo(2);
    JetStreamSubscription read =
        nats.nc
            .jetStream()
            .subscribe(subject, PullSubscribeOptions.builder().stream(stream).build());
    List<Message> got = read.fetch(10, Duration.ofSeconds(2));
    assertThat(got).hasSize(2);
    Message first = got.get(0);
    assertThat(new String(first.getData(), StandardCharsets.UTF_8)).isEqualTo("{\"n\":1}");
    assertThat(first.getHeaders().getFirst("Idempotency-Key")).isEqualTo("orders:aa");
    assertThat(first.getHeaders().getFirst("Nats-Msg-Id")).isEqualTo("orders:aa");
    assertThat(first.getHeaders().getFirst("Idem-Ordering-Key")).isEqualTo("cust-1");
    assertThat(first.getHeaders().getFirst("X-Extra")).isEqualTo("1");
    assertThat(first.getHeaders().getFirst("Content-Type")).isEqualTo("application/json");
  }

  @Test
  void noStreamForTheSubjectIsARetryableFailureNotADelivery() {
    try (Sink sink = Sinks.nats(nats.url, nats.subject("nowhere"), null, Duration.ofMillis(500))) {
      DeliveryOutcome out = sink.deliver(delivery("orders:cc", "{}"));
      assertThat(out).isInstanceOf(DeliveryOutcome.Failed.class);
      assertThat(((DeliveryOutcome.Failed) out).retryable()).isTrue();
    }
  }

  @Test
  void anExpectedStreamThatDoesNotHoldTheSubjectIsAFailure() throws Exception {
    String subject = nats.subject("out");
    nats.stream("OUT", subject);
    String other = nats.stream("OTHER", nats.subject("other"));
    try (Sink sink = Sinks.nats(nats.url, subject, other, Duration.ofSeconds(2))) {
      assertThat(sink.deliver(delivery("orders:dd", "{}")))
          .isInstanceOf(DeliveryOutcome.Failed.class);
    }
  }

  @Test
  void anUnreachableServerIsARetryableFailure() {
    try (Sink sink = Sinks.nats("nats://127.0.0.1:1", "x.y", null, Duration.ofMillis(300))) {
      DeliveryOutcome out = sink.deliver(delivery("orders:ee", "{}"));
      assertThat(out).isInstanceOf(DeliveryOutcome.Failed.class);
      assertThat(((DeliveryOutcome.Failed) out).error()).contains("cannot connect to NATS");
    }
  }
}
