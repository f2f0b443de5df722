package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.deliver.DeliveryOutcome;
import dev.idem.server.support.LogCapture;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link Pipeline#processAll}, the broker sources' batch path: one batch reserve and one batch
 * commit, each event's outcome as {@link Pipeline#process} would give it, and every reservation
 * settled when it returns. The store is the real memory store (behind {@link SwitchableStore}); the
 * test counts which of its calls the pipeline makes.
 */
class PipelineBatchTest {
  final ManualTimeSource time = new ManualTimeSource();
  final CountingStore store = new CountingStore();
  final List<String> delivered = new CopyOnWriteArrayList<>();
  volatile String failOn = "";

  static PipelineSettings settings(String extra) {
    return ConfigLoader.parse(
            "p.yaml",
            "pipelines:\n  - id: p\n    source: { webhook: { path: /p } }\n"
                + "    dedup: { key: source.id }\n    deliver: { stdout: {} }\n"
                + extra,
            n -> null)
        .pipelines()
        .get(0);
  }

  Pipeline pipeline() {
    return pipeline(true);
  }

  Pipeline pipeline(boolean batchCommits) {
    PipelineSettings s = settings("");
    return Pipeline.builder(s)
        .batchCommits(batchCommits)
        .keys(TestParts.idField())
        .timeSource(time)
        .sleeper(pause -> {}) // commit retries do not sleep here
        .dedup(
            Deduplicator.builder(store, Scope.of("p"))
                .config(s.dedup().config())
                .timeSource(time)
                .build(),
            null)
        .deliverer(
            d -> {
              String body = new String(d.body(), StandardCharsets.UTF_8);
              if (body.contains(failOn) && !failOn.isEmpty()) {
                return new DeliveryOutcome.Failed("the test refused it", true);
              }
              delivered.add(body);
              return new DeliveryOutcome.Delivered(200, null, null);
            })
        .build();
  }

  static List<InboundRequest> events(String... ids) {
    List<InboundRequest> out = new ArrayList<>();
    for (String id : ids) {
      out.add(
          new InboundRequest(
              ("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8), name -> null));
    }
    return out;
  }

  KeyState state(String id) {
    return store.inspect(Scope.of("p"), TestParts.keyOf(id), time.wallMillis());
  }

  @Test
  void aBatchIsReservedWithOneCallAndCommittedWithOneCall() {
    Pipeline p = pipeline();

    List<Outcome> outcomes = p.processAll(events("a", "b", "c", "d"));

    assertThat(outcomes).allMatch(o -> o instanceof Outcome.Accepted);
    assertThat(delivered).hasSize(4);
    assertThat(store.reserveAlls.get()).isEqualTo(1);
    assertThat(store.commitAlls.get()).isEqualTo(1);
    assertThat(store.commits.get()).isEqualTo(4); // the memory store's commitAll is a loop
    for (String id : List.of("a", "b", "c", "d")) {
      assertThat(state(id)).isInstanceOf(KeyState.Committed.class);
    }
  }

  @Test
  void withoutBatchCommitsEachKeyIsCommittedRightAfterItsDelivery() {
    Pipeline p = pipeline(false);
    List<Boolean> committedBefore = new ArrayList<>();
    store.onCommit = () -> committedBefore.add(delivered.size() == store.commits.get());

    List<Outcome> outcomes = p.processAll(events("a", "b", "c"));

    assertThat(outcomes).allMatch(o -> o instanceof Outcome.Accepted);
    assertThat(store.reserveAlls.get()).isEqualTo(1);
    assertThat(store.commitAlls.get()).isZero();
    assertThat(committedBefore).containsExactly(true, true, true); // commit i follows delivery i
  }

  @Test
  void everyKeyIsCommittedWhenProcessAllReturnsSoASecondBatchIsAllDuplicates() {
    Pipeline p = pipeline();
    p.processAll(events("a", "b"));

    List<Outcome> again = p.processAll(events("a", "b"));

    assertThat(again).allMatch(o -> o instanceof Outcome.Duplicate);
    assertThat(delivered).hasSize(2);
  }

  @Test
  void aKeyThatRepeatsInTheBatchIsADuplicateNotInFlight() {
    Pipeline p = pipeline();

    List<Outcome> outcomes = p.processAll(events("a", "b", "a", "c"));

    assertThat(outcomes.get(0)).isInstanceOf(Outcome.Accepted.class);
    assertThat(outcomes.get(1)).isInstanceOf(Outcome.Accepted.class);
    assertThat(outcomes.get(2)).isInstanceOf(Outcome.Duplicate.class);
    assertThat(outcomes.get(3)).isInstanceOf(Outcome.Accepted.class);
    assertThat(delivered).containsExactly("{\"id\":\"a\"}", "{\"id\":\"b\"}", "{\"id\":\"c\"}");
  }

  @Test
  void aFailedDeliveryIsReleasedWhileTheRestOfTheBatchIsCommitted() {
    Pipeline p = pipeline();
    failOn = "\"b\"";

    List<Outcome> outcomes = p.processAll(events("a", "b", "c"));

    assertThat(outcomes.get(0)).isInstanceOf(Outcome.Accepted.class);
    assertThat(outcomes.get(1)).isInstanceOf(Outcome.Failed.class);
    assertThat(outcomes.get(2)).isInstanceOf(Outcome.Accepted.class);
    assertThat(state("a")).isInstanceOf(KeyState.Committed.class);
    assertThat(state("b")).isInstanceOf(KeyState.Absent.class);
    assertThat(state("c")).isInstanceOf(KeyState.Committed.class);

    failOn = "";
    assertThat(p.processAll(events("b")).get(0)).isInstanceOf(Outcome.Accepted.class);
  }

  @Test
  void whileABatchRunsItsKeysAreInFlightForEveryoneElse() {
    Pipeline p = pipeline();
    List<Outcome> seenByAnother = new ArrayList<>();
    Pipeline other = pipeline();
    store.onCommitAll =
        () -> seenByAnother.addAll(other.processAll(events("a", "b"))); // before the commit

    p.processAll(events("a", "b"));

    assertThat(seenByAnother).allMatch(o -> o instanceof Outcome.InFlight);
    assertThat(delivered).hasSize(2);
  }

  @Test
  void aStoreOutageAnswersEveryEventUnavailableWithoutALinePerEvent() {
    Pipeline p = pipeline();
    store.down(true);

    List<Outcome> outcomes;
    List<String> warnings;
    try (LogCapture logs = LogCapture.idem()) {
      outcomes = p.processAll(events("a", "b", "c"));
      warnings = logs.lines(Level.WARN);
    }

    assertThat(outcomes)
        .allSatisfy(
            o -> {
              assertThat(o).isInstanceOf(Outcome.Unavailable.class);
              assertThat(((Outcome.Unavailable) o).code()).isEqualTo("store_unavailable");
              assertThat(((Outcome.Unavailable) o).message()).contains("turned the store off");
            });
    assertThat(warnings).isEmpty(); // the source logs the outage once
    assertThat(delivered).isEmpty();
  }

  @Test
  void aCommitThatFailsLeavesTheDeliveredEventsAcceptedAndLogsOneLine() {
    Pipeline p = pipeline();
    store.onCommitAll = () -> store.down(true);

    List<Outcome> outcomes;
    List<String> warnings;
    try (LogCapture logs = LogCapture.idem()) {
      outcomes = p.processAll(events("a", "b", "c"));
      warnings = logs.lines(Level.WARN);
    }

    assertThat(outcomes).allMatch(o -> o instanceof Outcome.Accepted);
    assertThat(warnings)
        .singleElement()
        .satisfies(w -> assertThat(w).contains("3 events delivered, but their commit failed"));
    store.down(false);
    assertThat(state("a")).isInstanceOf(KeyState.InFlight.class); // heals when its lease runs out
  }

  @Test
  void aBatchCommitWhoseAnswerWasLostIsTriedAgainSoEveryKeyIsCommitted() {
    Pipeline p = pipeline();
    store.store.loseCommits(1, false);

    List<Outcome> outcomes = p.processAll(events("a", "b", "c"));

    assertThat(outcomes).allMatch(o -> o instanceof Outcome.Accepted);
    assertThat(store.commitAlls.get()).isEqualTo(2);
    for (String id : List.of("a", "b", "c")) {
      assertThat(state(id)).isInstanceOf(KeyState.Committed.class);
    }
    assertThat(p.processAll(events("a", "b", "c"))).allMatch(o -> o instanceof Outcome.Duplicate);
    assertThat(delivered).hasSize(3);
  }

  /**
   * The real memory store (behind {@link SwitchableStore}'s off switch), counting the calls the
   * pipeline makes; the batch forms are the SPI's defaults (loops), as in the memory store.
   */
  static final class CountingStore implements DedupStore {
    final SwitchableStore store = new SwitchableStore();
    final AtomicInteger reserveAlls = new AtomicInteger();
    final AtomicInteger commitAlls = new AtomicInteger();
    final AtomicInteger commits = new AtomicInteger();
    volatile Runnable onCommitAll = () -> {};
    volatile Runnable onCommit = () -> {};

    @Override
    public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
      reserveAlls.incrementAndGet();
      return DedupStore.super.reserveAll(requests);
    }

    @Override
    public List<SettleResult> commitAll(List<CommitRequest> requests) {
      commitAlls.incrementAndGet();
      Runnable r = onCommitAll;
      onCommitAll = () -> {};
      r.run();
      return DedupStore.super.commitAll(requests);
    }

    @Override
    public SettleResult commit(CommitRequest request) {
      commits.incrementAndGet();
      onCommit.run();
      return store.commit(request);
    }

    void down(boolean down) {
      store.down(down);
    }

    @Override
    public ReserveResult reserve(ReserveRequest request) {
      return store.reserve(request);
    }

    @Override
    public SettleResult release(ReleaseRequest request) {
      return store.release(request);
    }

    @Override
    public SettleResult extend(ExtendRequest request) {
      return store.extend(request);
    }

    @Override
    public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
      return store.inspect(scope, key, nowMillis);
    }

    @Override
    public boolean forget(Scope scope, DedupKey key) {
      return store.forget(scope, key);
    }

    @Override
    public long clear(Scope scope) {
      return store.clear(scope);
    }

    @Override
    public StoreCapabilities capabilities() {
      return store.capabilities();
    }

    @Override
    public String describe() {
      return "counting " + store.describe();
    }

    @Override
    public void close() {
      store.close();
    }
  }
}
