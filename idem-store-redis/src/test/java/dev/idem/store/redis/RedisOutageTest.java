package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failure behaviour on private redis-server processes (free loopback ports): a server that goes
 * away, one that stalls, one that lost its scripts, one with a password, one behind Sentinel.
 */
class RedisOutageTest {
  private static final Scope SCOPE = Scope.of("outage", "dedup");
  private static final Ttl TTL = new Ttl(3_600_000, Expiry.SLIDING);

  @TempDir Path dir;

  private final ManualTimeSource time = new ManualTimeSource();
  private final AtomicLong tokens = new AtomicLong();
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T resource) {
    toClose.add(resource);
    return resource;
  }

  /** A long command timeout: these tests check behaviour, not speed, on a shared machine. */
  private static RedisDedupStore open(RedisProcess redis) {
    return RedisDedupStore.builder(redis.uri()).commandTimeout(Duration.ofSeconds(15)).build();
  }

  private ReserveRequest reserve(DedupKey key) {
    return new ReserveRequest(
        SCOPE, key, null, tokens.incrementAndGet(), time.wallMillis(), 60_000, TTL);
  }

  private static DedupKey key(long n) {
    return DedupKey.ofWords(n, n, n, n);
  }

  @Test
  void aStoppedServerFailsFastAsNotAppliedAndTheStoreRecoversWhenItReturns() throws Exception {
    // given a store (long command timeout: a queued command would hang for 20 s) with traffic
    RedisProcess redis = closeLater(RedisProcess.start(dir));
    RedisDedupStore store =
        closeLater(
            RedisDedupStore.builder(redis.uri()).commandTimeout(Duration.ofSeconds(20)).build());
    for (int i = 0; i < 100; i++) {
      ReserveRequest r = reserve(key(i));
      store.reserve(r);
      store.commit(new CommitRequest(SCOPE, key(i), r.token(), time.wallMillis(), TTL, null));
    }

    // when the server stops
    redis.stop();

    // then every operation fails at once (rejected, not queued) and says it was not applied
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> store.reserve(reserve(key(1000))))
                    .isInstanceOfSatisfying(
                        StoreUnavailableException.class,
                        e -> assertThat(e.outcomeUnknown()).isFalse()));
    assertTimeoutPreemptively(
        Duration.ofSeconds(5),
        () -> {
          for (int i = 0; i < 50; i++) {
            assertThatThrownBy(() -> store.reserve(reserve(key(2000))))
                .isInstanceOfSatisfying(
                    StoreUnavailableException.class,
                    e -> {
                      assertThat(e.outcomeUnknown()).isFalse();
                      assertThat(e.store()).isEqualTo(store.describe());
                      assertThat(e.getMessage()).contains("not connected");
                    });
          }
          assertThatThrownBy(() -> store.reserveAll(List.of(reserve(key(3000)))))
              .isInstanceOf(StoreUnavailableException.class);
          assertThatThrownBy(store::checkHealth).isInstanceOf(StoreUnavailableException.class);
        });

    // when it comes back on the same port (empty: it had no persistence)
    redis.startProcess();

    // then the store reconnects by itself, and the rejected reserve had left nothing behind
    await()
        .atMost(Duration.ofSeconds(30))
        .ignoreException(StoreUnavailableException.class)
        .untilAsserted(store::checkHealth);
    assertThat(store.inspect(SCOPE, key(2000), time.wallMillis())).isEqualTo(KeyState.ABSENT);
    ReserveRequest again = reserve(key(2000));
    assertThat(store.reserve(again)).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(
            store.commit(
                new CommitRequest(SCOPE, key(2000), again.token(), time.wallMillis(), TTL, null)))
        .isEqualTo(SettleResult.APPLIED);
  }

  @Test
  void aStalledServerIsATimeoutWithUnknownOutcomeAndTheReserveIsUndoneWhenItResumes()
      throws Exception {
    // given a store with a short command timeout, one to look with, and a key another holds
    RedisProcess redis = closeLater(RedisProcess.start(dir));
    RedisDedupStore impatient =
        closeLater(
            RedisDedupStore.builder(redis.uri()).commandTimeout(Duration.ofMillis(300)).build());
    RedisDedupStore patient = closeLater(open(redis));
    ReserveRequest held = reserve(key(4));
    assertThat(patient.reserve(held)).isInstanceOf(ReserveResult.Acquired.class);

    // when Redis stalls for 2 s while a reserve, a batch and a reserve of the held key are sent
    redis.cli("CLIENT", "PAUSE", "2000", "ALL");
    ReserveRequest first = reserve(key(1));
    List<ReserveRequest> batch = List.of(reserve(key(2)), reserve(key(3)));

    // then each reports an unknown outcome ...
    assertThatThrownBy(() -> impatient.reserve(first))
        .isInstanceOfSatisfying(
            StoreUnavailableException.class,
            e -> {
              assertThat(e.outcomeUnknown()).isTrue();
              assertThat(e.getMessage()).contains("300 ms").contains("lease");
            });
    assertThatThrownBy(() -> impatient.reserveAll(batch))
        .isInstanceOfSatisfying(
            StoreUnavailableException.class, e -> assertThat(e.outcomeUnknown()).isTrue());
    assertThatThrownBy(() -> impatient.reserve(reserve(key(4))))
        .isInstanceOf(StoreUnavailableException.class);
    assertThat(impatient.reserveAsync(reserve(key(5))))
        .failsWithin(Duration.ofSeconds(10))
        .withThrowableThat()
        .havingCause()
        .isInstanceOfSatisfying(
            StoreUnavailableException.class, e -> assertThat(e.outcomeUnknown()).isTrue());

    // ... and once Redis resumed, every reserve ran and was released by its own token, so no key
    // waits out the 60 s lease; the key another held keeps its holder (the release is fenced)
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              for (int k : new int[] {1, 2, 3, 5}) {
                assertThat(patient.inspect(SCOPE, key(k), time.wallMillis()))
                    .as("key %d", k)
                    .isEqualTo(KeyState.ABSENT);
              }
            });
    assertThat(patient.inspect(SCOPE, key(4), time.wallMillis()))
        .isInstanceOf(KeyState.InFlight.class);
    assertThat(patient.reserve(reserve(key(1)))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(
            patient.commit(
                new CommitRequest(SCOPE, key(4), held.token(), time.wallMillis(), TTL, null)))
        .isEqualTo(SettleResult.APPLIED);
  }

  @Test
  void aFlushedScriptCacheIsReloadedTransparently() throws Exception {
    RedisProcess redis = closeLater(RedisProcess.start(dir));
    RedisDedupStore store = closeLater(open(redis));
    store.reserve(reserve(key(1)));

    redis.cli("SCRIPT", "FLUSH");
    ReserveResult single = store.reserve(reserve(key(2)));
    redis.cli("SCRIPT", "FLUSH");
    List<ReserveResult> batch = store.reserveAll(List.of(reserve(key(3)), reserve(key(1))));

    assertThat(single).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(batch.get(0)).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(batch.get(1)).isInstanceOf(ReserveResult.InFlight.class);
    assertThat(redis.cli("SCRIPT", "EXISTS", LuaScripts.RESERVE.sha())).isEqualTo("1");
  }

  @Test
  void aPasswordInTheUriIsUsedAndNeverShown() throws Exception {
    RedisProcess redis = closeLater(RedisProcess.start(dir, "--requirepass", "s3cret-pw"));

    RedisDedupStore store =
        closeLater(
            RedisDedupStore.builder("redis://:s3cret-pw@127.0.0.1:" + redis.port())
                .commandTimeout(Duration.ofSeconds(15))
                .build());
    assertThat(store.reserve(reserve(key(1)))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(store.describe()).doesNotContain("s3cret");

    assertThatThrownBy(
            () -> RedisDedupStore.builder("redis://:wrong-pw@127.0.0.1:" + redis.port()).build())
        .isInstanceOfSatisfying(
            StoreUnavailableException.class,
            e -> {
              assertThat(e.outcomeUnknown()).isFalse();
              assertThat(e.getMessage()).contains("password").doesNotContain("wrong-pw");
            });
  }

  @Test
  void aSentinelUriFindsTheMaster() throws Exception {
    RedisProcess master = closeLater(RedisProcess.start(dir));
    RedisProcess sentinel = closeLater(RedisProcess.sentinel(dir, master));

    RedisDedupStore store =
        closeLater(
            RedisDedupStore.builder("redis-sentinel://127.0.0.1:" + sentinel.port() + "#mymaster")
                .commandTimeout(Duration.ofSeconds(15))
                .build());

    assertThat(store.describe()).startsWith("redis-sentinel://127.0.0.1:" + sentinel.port());
    assertThat(store.reserve(reserve(key(1)))).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(master.cli("DBSIZE")).isEqualTo("1");
  }

  @Test
  void nothingListeningIsUnavailableAtBuild() throws Exception {
    int port = RedisProcess.freePort();

    assertThatThrownBy(
            () ->
                RedisDedupStore.builder("redis://127.0.0.1:" + port)
                    .connectTimeout(Duration.ofSeconds(1))
                    .build())
        .isInstanceOfSatisfying(
            StoreUnavailableException.class,
            e -> {
              assertThat(e.outcomeUnknown()).isFalse();
              assertThat(e.store()).isEqualTo("redis://127.0.0.1:" + port + " prefix=idem:");
            });
  }
}
