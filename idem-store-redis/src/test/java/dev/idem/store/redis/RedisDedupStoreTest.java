package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.Ttl;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Redis store's own behaviour against the shared Redis (unique prefix per test). */
class RedisDedupStoreTest {
  private static final Scope SCOPE = Scope.of("orders", "dedup");
  private static final long MINUTE = 60_000;

  private final ManualTimeSource time = new ManualTimeSource();
  private final Random random = new Random(42);
  private String prefix;
  private RedisDedupStore store;

  @BeforeEach
  void open() {
    prefix = SharedRedis.uniquePrefix();
    store = open(prefix);
  }

  /** A long command timeout: these tests check behaviour, not speed, on a shared machine. */
  private static RedisDedupStore open(String prefix) {
    return RedisDedupStore.builder(SharedRedis.client())
        .prefix(prefix)
        .commandTimeout(Duration.ofSeconds(15))
        .build();
  }

  @AfterEach
  void cleanUp() {
    store.close();
    SharedRedis.removePrefix(prefix);
  }

  private DedupKey key(int n) {
    return DedupKey.ofWords(0x1122334455667788L, 0, 0, n);
  }

  private ReserveRequest reserve(DedupKey key, long token, Ttl ttl) {
    return new ReserveRequest(SCOPE, key, null, token, time.wallMillis(), 5 * MINUTE, ttl);
  }

  private byte[] redisKey(DedupKey key) {
    return (prefix + SCOPE + ":" + key.toHex()).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void keyLayoutIsPrefixScopeAndHexAndExpiryFollowsLeaseThenTtl() {
    // given
    DedupKey key = key(1);
    Ttl ttl = new Ttl(60 * MINUTE, Expiry.FIXED);
    RedisCommands<byte[], byte[]> redis = SharedRedis.admin();

    // when
    ReserveResult reserved = store.reserve(reserve(key, 7, ttl));

    // then: one key, exactly <prefix><pipeline>/<step>:<64 hex>, expiring at the lease's end
    assertThat(reserved).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(SharedRedis.countPrefix(prefix)).isEqualTo(1);
    String expected = prefix + "orders/dedup:1122334455667788" + "0".repeat(47) + "1";
    assertThat(redis.exists(expected.getBytes(StandardCharsets.UTF_8))).isEqualTo(1);
    assertThat(redis.pttl(redisKey(key))).isBetween(4 * MINUTE, 5 * MINUTE);

    // when committed, the Redis expiry becomes the TTL
    store.commit(new CommitRequest(SCOPE, key, 7, time.wallMillis(), ttl, null));
    assertThat(redis.pttl(redisKey(key))).isBetween(59 * MINUTE, 60 * MINUTE);
  }

  @Test
  void noTtlPersistsTheCommittedKey() {
    DedupKey key = key(2);
    store.reserve(reserve(key, 7, Ttl.NONE));

    store.commit(new CommitRequest(SCOPE, key, 7, time.wallMillis(), Ttl.NONE, null));

    assertThat(SharedRedis.admin().pttl(redisKey(key))).isEqualTo(-1);
    assertThat(store.inspect(SCOPE, key, Long.MAX_VALUE - 1))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void slidingDuplicateHitRestartsTheRedisExpiry() {
    // given a committed key with a 10 minute sliding window
    DedupKey key = key(3);
    Ttl ttl = new Ttl(10 * MINUTE, Expiry.SLIDING);
    store.reserve(reserve(key, 7, ttl));
    store.commit(new CommitRequest(SCOPE, key, 7, time.wallMillis(), ttl, null));
    long committedAt = time.wallMillis();
    SharedRedis.admin().pexpire(redisKey(key), 1_000_000); // shorter than the window

    // when a duplicate arrives 5 minutes later
    time.advanceMillis(5 * MINUTE);
    ReserveResult hit = store.reserve(reserve(key, 8, ttl));

    // then it is a duplicate whose window restarted, in the answer and in Redis
    assertThat(hit)
        .isEqualTo(new ReserveResult.Duplicate(committedAt, time.wallMillis() + 10 * MINUTE, null));
    assertThat(SharedRedis.admin().pttl(redisKey(key))).isBetween(9 * MINUTE, 10 * MINUTE);
  }

  @Test
  void resultsAreBinarySafeAndEmptyDiffersFromNone() {
    byte[] all = new byte[256];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) i;
    }
    Fingerprint fp = Fingerprint.sha256(all);
    Ttl ttl = new Ttl(MINUTE, Expiry.FIXED);
    long now = time.wallMillis();
    DedupKey[] keys = {key(10), key(11), key(12)};
    byte[][] results = {all, new byte[0], null};
    for (int i = 0; i < keys.length; i++) {
      store.reserve(new ReserveRequest(SCOPE, keys[i], fp, 7, now, MINUTE, ttl));
      store.commit(new CommitRequest(SCOPE, keys[i], 7, now, ttl, results[i]));
    }

    for (int i = 0; i < keys.length; i++) {
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, keys[i], fp, 8, now, MINUTE, ttl));
      assertThat(hit).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(((ReserveResult.Duplicate) hit).result()).isEqualTo(results[i]);
      KeyState state = store.inspect(SCOPE, keys[i], now);
      assertThat(state).isInstanceOf(KeyState.Committed.class);
      assertThat(((KeyState.Committed) state).result()).isEqualTo(results[i]);
      assertThat(((KeyState.Committed) state).fingerprint()).isEqualTo(fp);
    }
  }

  @Test
  void aForeignValueUnderTheKeyIsAStoreErrorNamingTheKey() {
    DedupKey hashKey = key(20);
    DedupKey junkKey = key(21);
    SharedRedis.admin().hset(redisKey(hashKey), "f".getBytes(), "v".getBytes());
    SharedRedis.admin().set(redisKey(junkKey), "not idem".getBytes());

    assertThatThrownBy(() -> store.reserve(reserve(hashKey, 7, Ttl.NONE)))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(new String(redisKey(hashKey), StandardCharsets.UTF_8))
        .hasMessageContaining("WRONGTYPE");
    assertThatThrownBy(
            () ->
                store.commit(
                    new CommitRequest(SCOPE, junkKey, 7, time.wallMillis(), Ttl.NONE, null)))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(new String(redisKey(junkKey), StandardCharsets.UTF_8))
        .hasMessageContaining("not an Idem v1 entry");
    assertThatThrownBy(() -> store.inspect(SCOPE, junkKey, time.wallMillis()))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("prefix");
  }

  @Test
  void aBatchWithOneForeignKeyFailsButTheOthersWereCarriedOut() {
    DedupKey hashKey = key(60);
    SharedRedis.admin().hset(redisKey(hashKey), "f".getBytes(), "v".getBytes());

    assertThatThrownBy(
            () ->
                store.reserveAll(
                    List.of(
                        reserve(key(61), 7, Ttl.NONE),
                        reserve(hashKey, 8, Ttl.NONE),
                        reserve(key(62), 9, Ttl.NONE))))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(new String(redisKey(hashKey), StandardCharsets.UTF_8));
    assertThat(store.inspect(SCOPE, key(61), time.wallMillis()))
        .isInstanceOf(KeyState.InFlight.class);
    assertThat(store.inspect(SCOPE, key(62), time.wallMillis()))
        .isInstanceOf(KeyState.InFlight.class);
  }

  @Test
  void clearRemovesOnlyItsScopeNotOtherScopesOrLongerPrefixes() {
    // given keys in two scopes, and a second store whose prefix extends this one's with our scope
    Scope other = Scope.of("orders", "other");
    String nested = prefix + SCOPE + ":";
    try (RedisDedupStore nestedStore = open(nested)) {
      for (int i = 0; i < 2500; i += 1) {
        store.reserve(reserve(key(i), 7, Ttl.NONE));
      }
      store.reserve(
          new ReserveRequest(other, key(1), null, 7, time.wallMillis(), MINUTE, Ttl.NONE));
      nestedStore.reserve(reserve(key(1), 7, Ttl.NONE));

      // when
      long removed = store.clear(SCOPE);

      // then
      assertThat(removed).isEqualTo(2500);
      assertThat(store.inspect(SCOPE, key(1), time.wallMillis())).isEqualTo(KeyState.ABSENT);
      assertThat(store.inspect(other, key(1), time.wallMillis()))
          .isInstanceOf(KeyState.InFlight.class);
      assertThat(nestedStore.inspect(SCOPE, key(1), time.wallMillis()))
          .isInstanceOf(KeyState.InFlight.class);
    }
  }

  @Test
  void forgetRemovesTheKeyAndFencesTheHolder() {
    DedupKey key = key(30);
    store.reserve(reserve(key, 7, Ttl.NONE));

    assertThat(store.forget(SCOPE, key)).isTrue();
    assertThat(store.forget(SCOPE, key)).isFalse();
    assertThat(store.commit(new CommitRequest(SCOPE, key, 7, time.wallMillis(), Ttl.NONE, null)))
        .isEqualTo(SettleResult.STALE);
  }

  @Test
  void batchesAnswerLikeSingleCallsInOrder() {
    Ttl ttl = new Ttl(10 * MINUTE, Expiry.SLIDING);
    List<ReserveRequest> reserves = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      reserves.add(reserve(key(i % 50), 1000 + i, ttl)); // each key twice
    }

    List<ReserveResult> reserved = store.reserveAll(reserves);

    for (int i = 0; i < 100; i++) {
      assertThat(reserved.get(i))
          .isInstanceOf(i < 50 ? ReserveResult.Acquired.class : ReserveResult.InFlight.class);
    }
    List<CommitRequest> commits = new ArrayList<>();
    List<ReleaseRequest> releases = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      if (i % 2 == 0) {
        commits.add(new CommitRequest(SCOPE, key(i), 1000 + i, time.wallMillis(), ttl, null));
      } else {
        releases.add(new ReleaseRequest(SCOPE, key(i), 1000 + i, time.wallMillis()));
      }
    }
    commits.add(new CommitRequest(SCOPE, key(1), 999, time.wallMillis(), ttl, null));
    List<SettleResult> committed = store.commitAll(commits);
    List<SettleResult> released = store.releaseAll(releases);

    assertThat(committed.subList(0, 25)).containsOnly(SettleResult.APPLIED);
    assertThat(committed.get(25)).isEqualTo(SettleResult.STALE);
    assertThat(released).hasSize(25).containsOnly(SettleResult.APPLIED);
    assertThat(store.reserveAll(List.of())).isEmpty();
    assertThat(store.inspect(SCOPE, key(0), time.wallMillis()))
        .isInstanceOf(KeyState.Committed.class);
    assertThat(store.inspect(SCOPE, key(1), time.wallMillis())).isEqualTo(KeyState.ABSENT);
  }

  /**
   * A seeded random walk of reserve/commit/release/inspect over a few keys, answered by Redis and
   * by {@link DedupStateMachine}: every answer must agree. Times are minutes apart so that Redis's
   * own expiry (relative, real time) never fires during the test.
   */
  @Test
  void agreesWithTheReferenceStateMachineOnARandomWalk() {
    Map<DedupKey, StoredEntry> model = new HashMap<>();
    Map<DedupKey, Long> lastToken = new HashMap<>();
    Fingerprint[] fps = {null, Fingerprint.sha256(new byte[] {1}), Fingerprint.sha256(new byte[2])};
    Ttl[] ttls = {
      Ttl.NONE,
      new Ttl(30 * MINUTE, Expiry.SLIDING),
      new Ttl(20 * MINUTE, Expiry.FIXED),
      new Ttl(45 * MINUTE, Expiry.SLIDING)
    };
    long token = 1;
    for (int step = 0; step < 3000; step++) {
      DedupKey key = key(random.nextInt(6));
      long now = time.wallMillis();
      Ttl ttl = ttls[random.nextInt(ttls.length)];
      int op = random.nextInt(10);
      if (op < 4) {
        token++;
        ReserveRequest r =
            new ReserveRequest(
                SCOPE,
                key,
                fps[random.nextInt(fps.length)],
                token,
                now,
                (1 + random.nextInt(40)) * MINUTE,
                ttl);
        DedupStateMachine.Transition<ReserveResult> expected =
            DedupStateMachine.reserve(model.get(key), r);
        assertThat(store.reserve(r))
            .as("step %d reserve", step)
            .usingRecursiveComparison()
            .isEqualTo(expected.answer());
        apply(model, key, expected);
        lastToken.put(key, token);
      } else if (op < 7) {
        long t = random.nextInt(4) == 0 ? token + 1 : lastToken.getOrDefault(key, 1L);
        byte[] result = random.nextBoolean() ? null : new byte[] {(byte) step};
        CommitRequest c = new CommitRequest(SCOPE, key, t, now, ttl, result);
        DedupStateMachine.Transition<SettleResult> expected =
            DedupStateMachine.commit(model.get(key), c);
        assertThat(store.commit(c)).as("step %d commit", step).isEqualTo(expected.answer());
        apply(model, key, expected);
      } else if (op < 8) {
        ReleaseRequest rr = new ReleaseRequest(SCOPE, key, lastToken.getOrDefault(key, 1L), now);
        DedupStateMachine.Transition<SettleResult> expected =
            DedupStateMachine.release(model.get(key), rr);
        assertThat(store.release(rr)).as("step %d release", step).isEqualTo(expected.answer());
        apply(model, key, expected);
      } else if (op < 9) {
        KeyState actual = store.inspect(SCOPE, key, now);
        KeyState expected = DedupStateMachine.inspect(model.get(key), now);
        assertThat(actual)
            .as("step %d inspect", step)
            .usingRecursiveComparison()
            .isEqualTo(expected);
      } else {
        time.advanceMillis(random.nextInt(25) * MINUTE);
      }
    }
  }

  private static <A> void apply(
      Map<DedupKey, StoredEntry> model, DedupKey key, DedupStateMachine.Transition<A> t) {
    if (t.changed()) {
      if (t.next() == null) {
        model.remove(key);
      } else {
        model.put(key, t.next());
      }
    }
  }

  @Test
  void asyncFormsAnswerLikeTheBlockingOnesAndFailWithTheSameExceptions() throws Exception {
    DedupKey key = key(50);
    Ttl ttl = new Ttl(10 * MINUTE, Expiry.FIXED);

    ReserveResult first = store.reserveAsync(reserve(key, 7, ttl)).get();
    ReserveResult second = store.reserveAsync(reserve(key, 8, ttl)).get();
    SettleResult stale = store.releaseAsync(new ReleaseRequest(SCOPE, key, 8, 0)).get();
    SettleResult committed =
        store
            .commitAsync(new CommitRequest(SCOPE, key, 7, time.wallMillis(), ttl, new byte[] {1}))
            .get();

    assertThat(first).isInstanceOf(ReserveResult.Acquired.class);
    assertThat(second).isInstanceOf(ReserveResult.InFlight.class);
    assertThat(stale).isEqualTo(SettleResult.STALE);
    assertThat(committed).isEqualTo(SettleResult.APPLIED);
    DedupKey hashKey = key(51);
    SharedRedis.admin().hset(redisKey(hashKey), "f".getBytes(), "v".getBytes());
    assertThat(store.reserveAsync(reserve(hashKey, 9, ttl)))
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(StoreException.class);
  }

  @Test
  void publishesItsScripts() {
    assertThat(RedisDedupStore.luaScripts())
        .containsOnlyKeys("reserve", "commit", "release", "extend");
    assertThat(RedisDedupStore.luaScripts().get("reserve")).contains("redis.call('SET'");
  }

  @Test
  void describesWithoutPasswordAndReportsCapabilities() {
    assertThat(store.describe()).contains("prefix=" + prefix);
    assertThat(store.capabilities().nativeExpiry()).isTrue();
    assertThat(store.capabilities().durable()).isTrue();
    assertThat(store.capabilities().boundedKeys()).isFalse();
    assertThat(store.capabilities().outbox()).as("an outbox on a standalone Redis").isTrue();
    store.checkHealth();
  }

  @Test
  void aStoreFromAUriOwnsItsClientAndAClosedStoreRefusesWork() {
    RedisDedupStore own =
        RedisDedupStore.builder(SharedRedis.service().url())
            .prefix(prefix)
            .commandTimeout(Duration.ofSeconds(15))
            .build();
    assertThat(own.describe()).startsWith("redis://127.0.0.1:");
    own.reserve(reserve(key(40), 7, Ttl.NONE));
    own.close();
    own.close();

    assertThatThrownBy(() -> own.reserve(reserve(key(41), 7, Ttl.NONE)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    // the caller-owned client behind `store` is untouched by closing a store
    store.close();
    try (RedisDedupStore again = open(prefix)) {
      assertThat(again.inspect(SCOPE, key(40), time.wallMillis()))
          .isInstanceOf(KeyState.InFlight.class);
    }
  }

  @Test
  void aCallerClientThatQueuesWhileDisconnectedIsRefused() {
    RedisClient queueing = RedisClient.create(SharedRedis.service().url());
    try {
      queueing.setOptions(
          ClientOptions.builder()
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.DEFAULT)
              .build());
      assertThatThrownBy(() -> RedisDedupStore.builder(queueing).build())
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("REJECT_COMMANDS");
    } finally {
      queueing.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  @Test
  void badSettingsAreConfigErrorsNamingTheField() {
    assertThatThrownBy(() -> RedisDedupStore.builder(SharedRedis.client()).prefix("a b").build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("prefix");
    assertThatThrownBy(
            () ->
                RedisDedupStore.builder(SharedRedis.client()).commandTimeout(Duration.ZERO).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("commandTimeout");
    assertThatThrownBy(() -> RedisDedupStore.builder(SharedRedis.client()).cluster(true).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("cluster");
  }
}
