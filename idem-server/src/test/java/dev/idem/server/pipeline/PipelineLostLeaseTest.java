package dev.idem.server.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Deduplicator;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.TestParts;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deferred commit ({@link Pipeline#processAsync} on RocksDB's group commit) whose lease ran out
 * during the delivery: the event is delivered, so the pipeline commits its key again, off the
 * thread that completed the commit.
 */
class PipelineLostLeaseTest {
  @TempDir Path dir;

  final ManualTimeSource time = new ManualTimeSource();
  final RecordingSink sink = new RecordingSink();

  @Test
  void aDeferredCommitWhoseLeaseRanOutIsCommittedAgainOnTheRecommitThread() throws Exception {
    List<String> reservedOn = new CopyOnWriteArrayList<>();
    try (RocksDbDedupStore rocks = RocksDbDedupStore.builder(dir).timeSource(time).build()) {
      DedupStore store = recordingReserves(rocks, reservedOn);
      PipelineSettings s =
          PipelineTest.settings("{ key: source.id, lease: 10s }", "{ stdout: {} }");
      Pipeline p =
          Pipeline.builder(s)
              .keys(TestParts.idField())
              .timeSource(time)
              .deliverer(
                  d -> {
                    time.advance(Duration.ofSeconds(11)); // the delivery outlives the lease
                    return sink.deliver(d);
                  })
              .dedup(
                  Deduplicator.builder(store, Scope.of("p"))
                      .config(s.dedup().config())
                      .timeSource(time)
                      .build(),
                  null)
              .build();

      Outcome o =
          p.processAsync(
                  new InboundRequest(
                      "{\"id\":\"late\"}".getBytes(StandardCharsets.UTF_8), n -> null))
              .toCompletableFuture()
              .get(10, TimeUnit.SECONDS);

      assertThat(o).isInstanceOf(Outcome.Accepted.class);
      assertThat(sink.delivered()).hasSize(1);
      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () ->
                  rocks.inspect(Scope.of("p"), TestParts.keyOf("late"), time.wallMillis())
                      instanceof KeyState.Committed);
      assertThat(reservedOn).hasSize(2);
      assertThat(reservedOn.get(1)).isEqualTo("idem-recommit");
    }
  }

  /** The store, recording the name of the thread of each reserve. */
  private static DedupStore recordingReserves(DedupStore store, List<String> threads) {
    return (DedupStore)
        Proxy.newProxyInstance(
            DedupStore.class.getClassLoader(),
            new Class<?>[] {DedupStore.class},
            (proxy, method, args) -> {
              if (method.getName().equals("reserve")) {
                threads.add(Thread.currentThread().getName());
              }
              try {
                return method.invoke(store, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }
}
