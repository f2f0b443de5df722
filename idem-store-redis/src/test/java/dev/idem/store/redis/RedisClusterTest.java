package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.Ttl;
import dev.idem.tck.DedupStoreContract;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The store on a three-master Redis Cluster of private redis-server processes: the whole contract
 * suite ({@link Contract}), and checks that single-key scripts route by slot unchanged, batches
 * span slots, and clear reaches every master. The cluster is started once for the class and its
 * processes are killed afterwards, also when a test fails.
 */
class RedisClusterTest {
  private static final Scope SCOPE = Scope.of("cluster", "dedup");
  private static final Ttl TTL = new Ttl(600_000, Expiry.SLIDING);
  private static final long NOW = 1_800_000_000_000L;

  static RedisClusterFixture cluster;

  @BeforeAll
  static void startCluster() throws Exception {
    cluster = RedisClusterFixture.start();
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * The contract suite on the cluster. Each store has a random prefix; the cluster is thrown away
   * after the class, so keys are not cleaned one by one. {@code reopen} opens a new store on the
   * same cluster and prefix.
   */
  @Nested
  class Contract extends DedupStoreContract {
    @Override // durable, native expiry, outbox (the prefix has a hash tag)
    protected StoreCapabilities expectedCapabilities() {
      return new StoreCapabilities(false, true, true, true);
    }

    @Override
    protected DedupStore newStore(TimeSource time) {
      return open(taggedPrefix());
    }

    @Override
    protected DedupStore reopen(DedupStore store, TimeSource time) {
      String prefix = ((RedisDedupStore) store).config().prefix();
      store.close();
      return open(prefix);
    }

    private RedisDedupStore open(String prefix) {
      return RedisDedupStore.builder(cluster.client())
          .prefix(prefix)
          .commandTimeout(Duration.ofSeconds(15))
          .build();
    }
  }

  /**
   * The contract suite on the cluster in the compact layout: every script runs on one shard's
   * directory and the bucket hashes that share its hash tag, so each stays on one slot.
   */
  @Nested
  class CompactContract extends DedupStoreContract {
    @Override // durable, native expiry; the compact layout has no outbox
    protected StoreCapabilities expectedCapabilities() {
      return new StoreCapabilities(false, true, true, false);
    }

    @Override
    protected DedupStore newStore(TimeSource time) {
      return open(SharedRedis.uniquePrefix());
    }

    @Override
    protected DedupStore reopen(DedupStore store, TimeSource time) {
      String prefix = ((RedisDedupStore) store).config().prefix();
      store.close();
      return open(prefix);
    }

    private RedisDedupStore open(String prefix) {
      return RedisDedupStore.builder(cluster.client())
          .prefix(prefix)
          .layout(RedisDedupStoreConfig.Layout.COMPACT)
          .compactShards(64)
          .commandTimeout(Duration.ofSeconds(15))
          .build();
    }
  }

  /** A unique prefix with a hash tag: every key of the store, outbox included, in one slot. */
  static String taggedPrefix() {
    return "idemtest:{" + java.util.UUID.randomUUID().toString().substring(0, 8) + "}:";
  }

  /**
   * The outbox on the cluster (nested, so it runs after the checks that count every key of the
   * masters): refused with the fix without a hash tag in the prefix, ordered per key with one.
   */
  @Nested
  class OutboxOnTheCluster {
    @Test
    void withoutAHashTagInThePrefixTheStoreHasNoOutboxAndSaysWhatToDo() {
      // given a store whose dedup keys spread over the slots
      try (RedisDedupStore store =
          RedisDedupStore.builder(cluster.client()).prefix(SharedRedis.uniquePrefix()).build()) {
        DedupKey k = key(77);
        assertThat(store.reserve(new ReserveRequest(SCOPE, k, null, 9, NOW, 60_000, TTL)))
            .isInstanceOf(ReserveResult.Acquired.class);

        // then it reports no outbox, and the outbox methods refuse with the fix
        assertThat(store.capabilities().outbox()).isFalse();
        assertThatThrownBy(
                () ->
                    store.commitAndEnqueue(
                        new CommitRequest(SCOPE, k, 9, NOW, TTL, null),
                        new OutboxMessage("cluster", k, new byte[] {1})))
            .isInstanceOf(IdemConfigException.class)
            .hasMessageContaining("hash tag");
        assertThatThrownBy(() -> store.claim("cluster", 10, NOW, 30_000))
            .isInstanceOf(IdemConfigException.class);
      }
    }

    @Test
    void withAHashTagTheOutboxKeepsOrderPerKeyOnTheCluster() {
      try (RedisDedupStore store =
          RedisDedupStore.builder(cluster.client()).prefix(taggedPrefix()).build()) {
        for (int i = 0; i < 3; i++) {
          DedupKey k = key(100 + i);
          assertThat(store.reserve(new ReserveRequest(SCOPE, k, null, 5, NOW, 60_000, TTL)))
              .isInstanceOf(ReserveResult.Acquired.class);
          assertThat(
                  store.commitAndEnqueue(
                      new CommitRequest(SCOPE, k, 5, NOW, TTL, null),
                      new OutboxMessage("cluster", k, new byte[] {(byte) i}, i < 2 ? "o" : null)))
              .isEqualTo(SettleResult.APPLIED);
        }
        List<OutboxRecord> first = store.claim("cluster", 10, NOW, 30_000);
        assertThat(first).extracting(r -> r.payload()[0]).containsExactly((byte) 0, (byte) 2);
        assertThat(store.acknowledge(first.get(0))).isTrue();
        assertThat(store.claim("cluster", 10, NOW, 30_000))
            .extracting(r -> r.payload()[0])
            .containsExactly((byte) 1);
      }
    }
  }

  private static DedupKey key(long n) {
    return DedupKey.ofWords(n * 0x9E3779B97F4A7C15L, n, 0, n);
  }

  @Test
  void compactShardsSpreadOverTheSlotsAndMastersByTheirHashTag() throws Exception {
    // given 2,000 keys of one scope committed in batches of 100 in the compact layout with 64
    // shards, one of them with a result too long to keep inline (so it has a result key next to
    // its shard hash)
    String prefix = SharedRedis.uniquePrefix();
    int shards = 64;
    CompactLayout layout = new CompactLayout(prefix, shards);
    byte[] longResult = new byte[200];
    try (RedisDedupStore store =
        RedisDedupStore.builder(cluster.client())
            .prefix(prefix)
            .layout(RedisDedupStoreConfig.Layout.COMPACT)
            .compactShards(shards)
            .commandTimeout(Duration.ofSeconds(15))
            .build()) {
      for (int batch = 0; batch < 20; batch++) {
        List<ReserveRequest> reserves = new ArrayList<>();
        List<CommitRequest> commits = new ArrayList<>();
        for (int n = batch * 100; n < batch * 100 + 100; n++) {
          reserves.add(new ReserveRequest(SCOPE, key(n), null, n + 1, NOW, 60_000, TTL));
          commits.add(
              new CommitRequest(SCOPE, key(n), n + 1, NOW, TTL, n == 7 ? longResult : null));
        }
        assertThat(store.reserveAll(reserves)).allMatch(ReserveResult.Acquired.class::isInstance);
        assertThat(store.commitAll(commits)).containsOnly(SettleResult.APPLIED);
      }

      // then each master holds a share of the 64 shard hashes, each hash on the slot of its tag
      // {<scope>|<shard>} (so the shards of one scope use many slots, not one), and the long
      // result's key sits on its shard hash's master
      Set<Integer> slots = new HashSet<>();
      long hashes = 0;
      String pattern = new String(layout.scanPattern(SCOPE), StandardCharsets.UTF_8);
      for (RedisProcess node : cluster.nodes()) {
        List<String> found =
            node.cli("--scan", "--pattern", pattern).lines().filter(l -> !l.isBlank()).toList();
        long onNode = found.stream().filter(k -> k.endsWith(":h")).count();
        assertThat(onNode).as("shard hashes on 127.0.0.1:" + node.port()).isGreaterThan(5);
        hashes += onNode;
        for (String k : found) {
          int slot = SlotHash.getSlot(k);
          String tag = k.substring(k.indexOf('{') + 1, k.indexOf('}'));
          assertThat(slot).as(k).isEqualTo(SlotHash.getSlot(tag));
          if (k.endsWith(":h")) {
            slots.add(slot);
          }
        }
      }
      assertThat(hashes).isEqualTo(shards);
      assertThat(slots).hasSizeGreaterThan(shards * 3 / 4);
      String hashName = new String(layout.shardHash(SCOPE, key(7)), StandardCharsets.UTF_8);
      String resultName = new String(layout.resultKey(SCOPE, key(7)), StandardCharsets.UTF_8);
      RedisProcess any = cluster.nodes().get(0);
      assertThat(any.cli("CLUSTER", "KEYSLOT", resultName))
          .isEqualTo(any.cli("CLUSTER", "KEYSLOT", hashName))
          .isEqualTo(Integer.toString(SlotHash.getSlot(hashName)));
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, key(7), null, 9_999, NOW + 1, 60_000, TTL));
      assertThat(((ReserveResult.Duplicate) hit).result()).isEqualTo(longResult);

      // and clear reaches every master
      assertThat(store.clear(SCOPE)).isEqualTo(2_000);
      for (RedisProcess node : cluster.nodes()) {
        assertThat(node.cli("--scan", "--pattern", pattern)).isEmpty();
      }
    }
  }

  @Test
  void keysSpreadOverEveryMasterAndBatchesSpanSlots() throws Exception {
    try (RedisDedupStore store =
        RedisDedupStore.builder(cluster.uri()).commandTimeout(Duration.ofSeconds(15)).build()) {
      // given 300 keys reserved and committed in batches of 100 (each batch spans many slots)
      for (int batch = 0; batch < 3; batch++) {
        List<ReserveRequest> reserves = new ArrayList<>();
        List<CommitRequest> commits = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
          int n = batch * 100 + i;
          reserves.add(new ReserveRequest(SCOPE, key(n), null, n + 1, NOW, 60_000, TTL));
          commits.add(new CommitRequest(SCOPE, key(n), n + 1, NOW, TTL, new byte[] {(byte) n}));
        }
        assertThat(store.reserveAll(reserves)).allMatch(ReserveResult.Acquired.class::isInstance);
        assertThat(store.commitAll(commits)).containsOnly(SettleResult.APPLIED);
      }

      // then every master holds some, and a single reserve sees the duplicate with its result
      for (RedisProcess node : cluster.nodes()) {
        assertThat(Long.parseLong(node.cli("DBSIZE"))).isGreaterThan(50);
      }
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, key(7), null, 999, NOW + 1, 60_000, TTL));
      assertThat(hit).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(((ReserveResult.Duplicate) hit).result()).containsExactly(7);
      assertThat(store.describe()).startsWith("redis-cluster://127.0.0.1:");

      // when the scope is cleared
      long removed = store.clear(SCOPE);

      // then it reached every master
      assertThat(removed).isEqualTo(300);
      for (RedisProcess node : cluster.nodes()) {
        assertThat(node.cli("DBSIZE")).isEqualTo("0");
      }
      assertThat(store.inspect(SCOPE, key(7), NOW)).isEqualTo(KeyState.ABSENT);
      store.checkHealth();
    }
  }
}
