package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.tck.DedupStoreContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

  private static DedupKey key(long n) {
    return DedupKey.ofWords(n * 0x9E3779B97F4A7C15L, n, 0, n);
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
