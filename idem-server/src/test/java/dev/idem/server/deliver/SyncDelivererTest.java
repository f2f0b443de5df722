package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ManualTimeSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SyncDelivererTest {
  private static final Delivery EVENT =
      new Delivery("orders", "key-1", null, "{}".getBytes(StandardCharsets.UTF_8), Map.of());
  private static final DeliveryOutcome UNAVAILABLE = new DeliveryOutcome.Failed("HTTP 503", true);

  private final ManualTimeSource clock = new ManualTimeSource();
  private final RecordingSleeper sleeper = new RecordingSleeper(clock);
  private final RecordingListener listener = new RecordingListener();
  private final ScriptedSink sink = new ScriptedSink();

  private SyncDeliverer deliverer(RetryPolicy policy, Duration deadline) {
    return SyncDeliverer.builder(sink)
        .retryPolicy(policy)
        .listener(listener)
        .deadline(deadline)
        .timeSource(clock)
        .sleeper(sleeper)
        .jitter(() -> 0.5)
        .build();
  }

  @AfterEach
  void noInterruptLeaks() {
    assertThat(Thread.interrupted()).isFalse();
  }

  @Test
  void deliversAtOnceWithoutWaiting() {
    DeliveryOutcome outcome = deliverer(RetryPolicy.DEFAULT, Duration.ofSeconds(10)).deliver(EVENT);

    assertThat(outcome).isInstanceOf(DeliveryOutcome.Delivered.class);
    assertThat(sink.attempts()).containsExactly("key-1");
    assertThat(sleeper.waits()).isEmpty();
    assertThat(listener.events()).containsExactly("delivered orders 1");
  }

  @Test
  void retriesWithExponentialBackoffAndJitterUntilDelivered() {
    // Given downstream fails twice, then accepts
    sink.script("key-1", UNAVAILABLE, UNAVAILABLE);
    RetryPolicy policy = new RetryPolicy(5, Duration.ofSeconds(1), Duration.ofSeconds(30));

    // When
    DeliveryOutcome outcome = deliverer(policy, Duration.ofMinutes(1)).deliver(EVENT);

    // Then it waited half of 1s, then half of 2s (jitter 0.5), and was delivered on attempt 3
    assertThat(outcome).isInstanceOf(DeliveryOutcome.Delivered.class);
    assertThat(sink.attempts()).containsExactly("key-1", "key-1", "key-1");
    assertThat(sleeper.waits()).containsExactly(Duration.ofMillis(500), Duration.ofMillis(1000));
    assertThat(listener.events())
        .containsExactly(
            "retry orders 1 HTTP 503", "retry orders 2 HTTP 503", "delivered orders 3");
    assertThat(listener.latencies()).containsExactly(Duration.ofMillis(1500));
  }

  @Test
  void stopsAtOnceOnANonRetryableFailure() {
    sink.script("key-1", new DeliveryOutcome.Failed("HTTP 400 from POST /x", false));

    DeliveryOutcome outcome = deliverer(RetryPolicy.DEFAULT, Duration.ofMinutes(1)).deliver(EVENT);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isFalse();
              assertThat(f.error())
                  .isEqualTo("gave up after 1 attempt (not retryable): HTTP 400 from POST /x");
            });
    assertThat(sink.attempts()).hasSize(1);
    assertThat(sleeper.waits()).isEmpty();
    assertThat(listener.events()).containsExactly("gave-up orders 1 HTTP 400 from POST /x alive");
  }

  @Test
  void givesUpAfterTheLastRetry() {
    sink.script("key-1", UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    RetryPolicy policy = new RetryPolicy(2, Duration.ofMillis(100), Duration.ofSeconds(1));

    DeliveryOutcome outcome = deliverer(policy, Duration.ofMinutes(1)).deliver(EVENT);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.error()).startsWith("gave up after 3 attempts (no retries left)");
            });
    assertThat(sink.attempts()).hasSize(3);
    assertThat(listener.events()).last().isEqualTo("gave-up orders 3 HTTP 503 alive");
  }

  @Test
  void waitsAtLeastAsLongAsRetryAfterUpToTheMaximumBackoff() {
    sink.script(
        "key-1",
        new DeliveryOutcome.Failed("HTTP 429", true, Duration.ofSeconds(7)),
        new DeliveryOutcome.Failed("HTTP 503", true, Duration.ofHours(2)));
    RetryPolicy policy = new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofSeconds(20));

    DeliveryOutcome outcome = deliverer(policy, Duration.ofMinutes(5)).deliver(EVENT);

    assertThat(outcome).isInstanceOf(DeliveryOutcome.Delivered.class);
    assertThat(sleeper.waits()).containsExactly(Duration.ofSeconds(7), Duration.ofSeconds(20));
  }

  @Test
  void theDeadlineEndsRetriesBeforeTheSenderGivesUp() {
    // Given retries of 0.5s, 1s, 2s, ... (jitter 0.5) and a deadline of 2.5s
    sink.script("key-1", UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    RetryPolicy policy = new RetryPolicy(5, Duration.ofSeconds(1), Duration.ofSeconds(30));

    // When
    DeliveryOutcome outcome = deliverer(policy, Duration.ofMillis(2500)).deliver(EVENT);

    // Then the third retry (ending at 3.5s) is not started: failed, retryable so the sender retries
    assertThat(sink.attempts()).hasSize(3);
    assertThat(sleeper.waits()).containsExactly(Duration.ofMillis(500), Duration.ofMillis(1000));
    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.error()).contains("2500ms deadline");
            });
  }

  @Test
  void anInterruptedWaitEndsTheDeliveryAndKeepsTheInterrupt() {
    sink.script("key-1", UNAVAILABLE);
    SyncDeliverer deliverer =
        SyncDeliverer.builder(sink)
            .sleeper(
                d -> {
                  throw new InterruptedException();
                })
            .build();

    DeliveryOutcome outcome = deliverer.deliver(EVENT);

    assertThat(Thread.interrupted()).isTrue();
    assertThat(outcome)
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class, f -> assertThat(f.error()).contains("interrupted"));
  }

  @Test
  void aSinkThatThrowsIsARetryableFailure() {
    Sink throwing =
        new Sink() {
          @Override
          public DeliveryOutcome deliver(Delivery delivery) {
            throw new IllegalStateException("bug");
          }

          @Override
          public String describe() {
            return "throwing";
          }

          @Override
          public void close() {}
        };
    SyncDeliverer deliverer =
        SyncDeliverer.builder(throwing)
            .retryPolicy(new RetryPolicy(1, Duration.ofMillis(1), Duration.ofMillis(1)))
            .sleeper(sleeper)
            .build();

    assertThat(deliverer.deliver(EVENT))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).isTrue();
              assertThat(f.error()).contains("gave up after 2 attempts").contains("bug");
            });
  }

  @Test
  void theConvenienceConstructorUsesTheDefaultDeadline() {
    SyncDeliverer deliverer = new SyncDeliverer(sink, RetryPolicy.DEFAULT, DeliveryListener.NOOP);

    assertThat(deliverer.deadline()).isEqualTo(SyncDeliverer.DEFAULT_DEADLINE);
    assertThat(deliverer.deliver(EVENT)).isInstanceOf(DeliveryOutcome.Delivered.class);
  }
}
