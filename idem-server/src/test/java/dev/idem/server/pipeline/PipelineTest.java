package dev.idem.server.pipeline;

import static dev.idem.server.support.PipelineAnswers.answer;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.Delivery;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import dev.idem.server.transform.TransformException;
import dev.idem.spi.KeyState;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The pipeline's steps and settlements, without HTTP. */
class PipelineTest {
  final SwitchableStore store = new SwitchableStore();
  final RecordingSink sink = new RecordingSink();
  final ManualTimeSource time = new ManualTimeSource();

  /** The pauses the pipeline took between commit attempts (none is slept). */
  final List<Duration> pauses = new java.util.concurrent.CopyOnWriteArrayList<>();

  static PipelineSettings settings(String dedup, String deliver) {
    return ConfigLoader.parse(
            "p.yaml",
            "store: { type: memory }\npipelines:\n  - id: p\n    source: { webhook: { path: /p } }\n"
                + (dedup.isEmpty() ? "" : "    dedup: " + dedup + "\n")
                + "    deliver: "
                + deliver
                + "\n",
            n -> null)
        .pipelines()
        .get(0);
  }

  Pipeline.Builder builder(PipelineSettings s) {
    Pipeline.Builder b =
        Pipeline.builder(s)
            .keys(TestParts.idField())
            .timeSource(time)
            .sleeper(pauses::add)
            .deliverer(TestParts.retrying(sink, 0));
    if (s.dedup() != null) {
      b.dedup(
          Deduplicator.builder(store, Scope.of("p"))
              .config(s.dedup().config())
              .timeSource(time)
              .build(),
          store);
    }
    return b;
  }

  static InboundRequest event(String json) {
    return new InboundRequest(json.getBytes(StandardCharsets.UTF_8), name -> null);
  }

  KeyState state(String id) {
    return store.inspect(Scope.of("p"), TestParts.keyOf(id), time.wallMillis());
  }

  @Test
  void aTransformWithNoOutputDropsTheEventAndReleasesItsKey() {
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }")).transform(b -> List.of()).build();

    Answer a = answer(p, event("{\"id\":\"drop\"}"));

    assertThat(a).isEqualTo(Answer.ACCEPTED);
    assertThat(sink.delivered()).isEmpty();
    assertThat(state("drop")).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void aFailingTransformIs500AndReleasesTheKey() {
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }"))
            .transform(
                b -> {
                  throw new TransformException("jq: .x is not an object", new RuntimeException());
                })
            .build();

    Answer a = answer(p, event("{\"id\":\"bad\"}"));

    assertThat(a.status()).isEqualTo(500);
    assertThat(a.bodyText())
        .startsWith("{\"error\":\"transform_failed\"")
        .doesNotContain(".x is not an object");
    assertThat(state("bad")).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void aFanOutDeliversEveryChildWithItsOwnIdempotencyKeyThenCommits() {
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }"))
            .transform(
                b ->
                    List.of(
                        "{\"line\":1}".getBytes(StandardCharsets.UTF_8),
                        "{\"line\":2}".getBytes(StandardCharsets.UTF_8)))
            .build();

    Answer a = answer(p, event("{\"id\":\"fan\"}"));

    String hex = TestParts.keyOf("fan").toHex();
    assertThat(a).isEqualTo(Answer.ACCEPTED);
    assertThat(sink.delivered())
        .extracting(Delivery::idempotencyKey)
        .containsExactly("p:" + hex + ":0", "p:" + hex + ":1");
    assertThat(state("fan")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aFanOutWhoseChildFailsIs502AndReleasesTheParentKey() {
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }"))
            .transform(
                b ->
                    List.of(
                        "{\"line\":1}".getBytes(StandardCharsets.UTF_8),
                        "{\"line\":2}".getBytes(StandardCharsets.UTF_8)))
            .deliverer(
                d ->
                    d.idempotencyKey().endsWith(":1")
                        ? new dev.idem.server.deliver.DeliveryOutcome.Failed("down", true)
                        : sink.deliver(d))
            .build();

    Answer a = answer(p, event("{\"id\":\"fan-fail\"}"));

    assertThat(a.status()).isEqualTo(502);
    assertThat(state("fan-fail")).isEqualTo(KeyState.ABSENT);
  }

  @Test
  void asyncModeCommitsTheKeyAndEnqueuesTheEventInOneStepThenAnswers202() {
    List<Delivery> encoded = new ArrayList<>();
    Pipeline p =
        builder(settings("{ key: source.id }", "{ mode: async, stdout: {} }"))
            .outboxEncoder(
                d -> {
                  encoded.add(d);
                  return d.body();
                })
            .build();

    Answer first = answer(p, event("{\"id\":\"a-1\"}"));
    Answer again = answer(p, event("{\"id\":\"a-1\"}"));

    assertThat(first).isEqualTo(Answer.ACCEPTED);
    assertThat(again).isEqualTo(Answer.DUPLICATE);
    assertThat(sink.delivered()).isEmpty(); // the dispatcher delivers, not the request
    assertThat(store.depth("p")).isEqualTo(1);
    assertThat(encoded)
        .singleElement()
        .satisfies(
            d -> assertThat(d.idempotencyKey()).isEqualTo("p:" + TestParts.keyOf("a-1").toHex()));
    assertThat(state("a-1")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void asyncModeEnqueuesEveryFanOutChildWithTheCommitInOneStep() {
    List<Delivery> encoded = new ArrayList<>();
    Pipeline p =
        builder(settings("{ key: source.id }", "{ mode: async, stdout: {} }"))
            .transform(
                b ->
                    List.of(
                        "{\"line\":1}".getBytes(StandardCharsets.UTF_8),
                        "{\"line\":2}".getBytes(StandardCharsets.UTF_8)))
            .outboxEncoder(
                d -> {
                  encoded.add(d);
                  return d.body();
                })
            .build();

    Answer a = answer(p, event("{\"id\":\"a-fan\"}"));

    String hex = TestParts.keyOf("a-fan").toHex();
    assertThat(a).isEqualTo(Answer.ACCEPTED);
    assertThat(store.depth("p")).isEqualTo(2);
    assertThat(encoded)
        .extracting(Delivery::idempotencyKey)
        .containsExactly("p:" + hex + ":0", "p:" + hex + ":1");
    assertThat(state("a-fan")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void asyncModeWhoseLeaseRanOutBeforeTheAcceptEnqueuesNothingAndSays503() {
    Pipeline p =
        builder(settings("{ key: source.id, lease: 1s }", "{ mode: async, stdout: {} }"))
            .transform(
                b -> {
                  time.advance(Duration.ofSeconds(2)); // processing outlasts the lease
                  return List.of(b);
                })
            .outboxEncoder(Delivery::body)
            .build();

    Answer a = answer(p, event("{\"id\":\"slow\"}"));

    assertThat(a.status()).isEqualTo(503);
    assertThat(a.bodyText()).startsWith("{\"error\":\"lease_expired\"");
    assertThat(store.depth("p")).isZero();
  }

  /**
   * Issue 9 §2: a reserve that returned Acquired after a stall, with its lease already run out, was
   * delivered; a resend was then delivered again.
   */
  @Test
  void aReserveWhoseLeaseRanOutDuringTheStoreCallIsNotDeliveredAndSays503() {
    // Given a store call that outlasts the lease (the store stalled while reserving)
    Pipeline p = builder(settings("{ key: source.id, lease: 1s }", "{ stdout: {} }")).build();
    store.onReserve(() -> time.advance(Duration.ofSeconds(2)));

    // When the event comes in
    Answer a = answer(p, event("{\"id\":\"stalled\"}"));

    // Then nothing is delivered, the answer is 503 with Retry-After, and the key is free again
    assertThat(a.status()).isEqualTo(503);
    assertThat(a.bodyText()).startsWith("{\"error\":\"lease_expired\"");
    assertThat(a.headers()).containsKey("Retry-After");
    assertThat(sink.delivered()).isEmpty();
    assertThat(state("stalled")).isEqualTo(KeyState.ABSENT);

    // And a resend after the stall is delivered once
    store.onReserve(() -> {});
    assertThat(answer(p, event("{\"id\":\"stalled\"}"))).isEqualTo(Answer.ACCEPTED);
    assertThat(sink.delivered()).hasSize(1);
  }

  @Test
  void aLeaseThatRanOutWhileWaitingForTheOrderingTurnIsNotDelivered() {
    // Given an ordering wait that outlasts the lease
    Pipeline p =
        builder(settings("{ key: source.id, lease: 1s }", "{ stdout: {} }"))
            .ordering(
                request -> {
                  time.advance(Duration.ofSeconds(2));
                  return new OrderingStep.Turn() {
                    @Override
                    public String key() {
                      return "k";
                    }

                    @Override
                    public void close() {}
                  };
                })
            .build();

    // When the event comes in, then it is not delivered and the key is released
    Answer a = answer(p, event("{\"id\":\"waited\"}"));
    assertThat(a.status()).isEqualTo(503);
    assertThat(sink.delivered()).isEmpty();
    assertThat(state("waited")).isEqualTo(KeyState.ABSENT);
  }

  /**
   * Issue 11: an instance whose shared ordering lock ran out while it waited (paused or starved
   * past {@code lock_ttl}) must not deliver: another instance may hold the key now. It releases the
   * key and answers 503, so the sender's retry is accepted once the key's lock is held again.
   */
  @Test
  void aTurnWhoseSharedLockWasLostDeliversNothingAndReleasesTheKey() {
    // Given an ordering step whose turn reports its lock lost
    boolean[] lost = {true};
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }"))
            .ordering(
                request ->
                    new OrderingStep.Turn() {
                      @Override
                      public String key() {
                        return "customer-1";
                      }

                      @Override
                      public boolean lockLost(long nowMillis) {
                        return lost[0];
                      }

                      @Override
                      public void close() {}
                    })
            .build();

    // When the event comes in, then nothing is delivered and the key is released
    Answer a = answer(p, event("{\"id\":\"fenced-out\"}"));
    assertThat(a.status()).isEqualTo(503);
    assertThat(a.headers()).containsKey("Retry-After");
    assertThat(sink.delivered()).isEmpty();
    assertThat(state("fenced-out")).isEqualTo(KeyState.ABSENT);

    // And once the lock is held again, the retry is delivered once
    lost[0] = false;
    assertThat(answer(p, event("{\"id\":\"fenced-out\"}")).status()).isEqualTo(202);
    assertThat(sink.delivered()).hasSize(1);
  }

  @Test
  void theOrderingTurnIsHeldDuringDeliveryAndGivenBackAfterwards() {
    List<String> log = new ArrayList<>();
    OrderingStep ordering =
        request -> {
          log.add("enter");
          return new OrderingStep.Turn() {
            @Override
            public String key() {
              return "customer-9";
            }

            @Override
            public void close() {
              log.add("leave");
            }
          };
        };
    Pipeline p =
        builder(settings("{ key: source.id }", "{ stdout: {} }"))
            .ordering(ordering)
            .deliverer(
                d -> {
                  log.add("deliver " + d.orderingKey());
                  return sink.deliver(d);
                })
            .build();

    answer(p, event("{\"id\":\"o-1\"}"));

    assertThat(log).containsExactly("enter", "deliver customer-9", "leave");
  }

  /**
   * Issue 11: a live holder renews its lease while its work runs, so work longer than the lease
   * keeps single flight and commits; without renewal the commit finds the lease lost.
   */
  @Test
  void aLeaseIsRenewedWhileTheWorkRunsSoLongWorkStillCommits() {
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try {
      long[] renewedUntil = new long[1];
      Pipeline p =
          builder(settings("{ key: id, lease: 300ms }", "{ stdout: {} }"))
              .renewals(timer)
              .deliverer(
                  d -> {
                    // Twice past a third of the lease and past its first end: each time, wait
                    // until the timer renewed the lease from the (manual) now.
                    for (int i = 0; i < 2; i++) {
                      time.advance(Duration.ofMillis(200));
                      long now = time.wallMillis();
                      Awaitility.await()
                          .atMost(Duration.ofSeconds(10))
                          .until(
                              () ->
                                  state("long") instanceof KeyState.InFlight f
                                      && f.leaseUntilMillis() >= now + 300);
                      renewedUntil[0] = ((KeyState.InFlight) state("long")).leaseUntilMillis();
                    }
                    return sink.deliver(d);
                  })
              .build();
      long start = time.wallMillis();

      Answer a = answer(p, event("{\"id\":\"long\"}"));

      assertThat(a.status()).isEqualTo(202);
      assertThat(renewedUntil[0]).isGreaterThanOrEqualTo(start + 400 + 300);
      assertThat(state("long")).isInstanceOf(KeyState.Committed.class);
      assertThat(sink.delivered()).hasSize(1);
    } finally {
      timer.shutdownNow();
    }
  }

  /**
   * A commit that got no answer (a command timeout after this JVM was paused, say): never sent,
   * without a second attempt the key stays in flight until its lease ends and the resend after that
   * is delivered again; applied by the store anyway, the second attempt is harmless.
   */
  @ParameterizedTest(name = "applied by the store: {0}")
  @ValueSource(booleans = {false, true})
  void aCommitWhoseAnswerWasLostIsTriedAgainSoTheResendIsADuplicate(boolean applied) {
    Pipeline p = builder(settings("{ key: id }", "{ stdout: {} }")).build();
    store.loseCommits(1, applied);

    Answer first = answer(p, event("{\"id\":\"lost\"}"));

    assertThat(first.status()).isEqualTo(202);
    assertThat(state("lost")).isInstanceOf(KeyState.Committed.class);
    assertThat(answer(p, event("{\"id\":\"lost\"}")).status()).isEqualTo(200);
    assertThat(sink.delivered()).hasSize(1);
    assertThat(pauses).containsExactly(Duration.ofMillis(Pipeline.COMMIT_RETRY_PAUSE_MILLIS));
  }

  /**
   * The retries are bounded: three lost commits leave the key to its lease (the documented bound).
   */
  @Test
  void aCommitThatFailsEveryAttemptLeavesTheKeyInFlightAndTheEventAccepted() {
    Pipeline p = builder(settings("{ key: id }", "{ stdout: {} }")).build();
    store.loseCommits(Pipeline.COMMIT_ATTEMPTS, false);

    Answer first = answer(p, event("{\"id\":\"down\"}"));

    assertThat(first.status()).isEqualTo(202);
    assertThat(state("down")).isInstanceOf(KeyState.InFlight.class);
    assertThat(answer(p, event("{\"id\":\"down\"}")).status()).isEqualTo(409);
    assertThat(pauses)
        .containsExactly(
            Duration.ofMillis(Pipeline.COMMIT_RETRY_PAUSE_MILLIS),
            Duration.ofMillis(2 * Pipeline.COMMIT_RETRY_PAUSE_MILLIS));
  }

  @Test
  void withoutDedupEveryEventIsDelivered() {
    Pipeline p = builder(settings("", "{ stdout: {} }")).build();

    answer(p, event("{\"id\":\"same\"}"));
    answer(p, event("{\"id\":\"same\"}"));

    assertThat(sink.delivered()).hasSize(2);
  }

  @Test
  void headersReachTheKeyRuleCaseInsensitively() {
    Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    headers.put("X-Id", "h-1");
    EventKeys byHeader =
        new EventKeys() {
          @Override
          public DedupKey derive(InboundRequest r) {
            return TestParts.keyOf(r.header("x-id"));
          }

          @Override
          public DedupKey fromRaw(String raw) {
            return TestParts.keyOf(raw);
          }

          @Override
          public String describe() {
            return "header X-Id";
          }
        };
    Pipeline p =
        builder(settings("{ key: 'header(\"X-Id\")' }", "{ stdout: {} }")).keys(byHeader).build();

    Answer a = answer(p, new InboundRequest("{}".getBytes(StandardCharsets.UTF_8), headers::get));

    assertThat(a).isEqualTo(Answer.ACCEPTED);
    assertThat(state("h-1")).isInstanceOf(KeyState.Committed.class);
  }
}
