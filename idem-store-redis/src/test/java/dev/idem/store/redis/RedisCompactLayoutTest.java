package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.Ttl;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The compact layout's stable names and value format (fixed vectors), and what it leaves in Redis:
 * small listpack hashes per bucket that expire as a whole, a directory per shard, a key in exactly
 * one bucket, moves on sliding hits, long results in their own key. The answers themselves are the
 * contract suite's business ({@link RedisCompactDedupStoreContractTest}).
 */
class RedisCompactLayoutTest {
  private static final Scope SCOPE = Scope.of("shop-orders", "dedup");
  private static final long HOUR = 3_600_000;
  private static final DedupKey VECTOR =
      DedupKey.parseHex("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");

  private final List<String> prefixes = new ArrayList<>();

  @AfterEach
  void removeKeys() {
    prefixes.forEach(SharedRedis::removePrefix);
  }

  @Test
  void namesAreStable() {
    CompactLayout layout = new CompactLayout("idem:", 4096);

    // 0x9f86d081884c7d65 mod 4096 = 0xd65
    assertThat(layout.shardBase(SCOPE, VECTOR)).isEqualTo("idem:{shop-orders/dedup|d65}");
    assertThat(text(layout.directory(SCOPE, VECTOR))).isEqualTo("idem:{shop-orders/dedup|d65}:d");
    assertThat(text(layout.resultKey(SCOPE, VECTOR)))
        .isEqualTo("idem:{shop-orders/dedup|d65}:r:" + VECTOR.toHex());
    assertThat(text(new CompactLayout("a*b:", 1).scanPattern(SCOPE)))
        .isEqualTo("a\\*b:\\{shop-orders/dedup|*");
  }

  @Test
  void bucketsAreAnEighthToAQuarterOfTheTimeLeftAndEndAfterTheDeadline() {
    long now = 1_800_000_000_000L;
    long deadline = now + 24 * HOUR;

    CompactLayout.Bucket day = CompactLayout.bucketFor(deadline, now);
    CompactLayout.Bucket second = CompactLayout.bucketFor(now + 10, now);

    // 24 h / 8 = 10.8e6 ms -> 2^24 ms (4.7 h) buckets
    long width = 1L << 24;
    long number = deadline / width;
    assertThat(text(day.member()))
        .isEqualTo(Integer.toString(24, 36) + "." + Long.toString(number, 36));
    assertThat(Long.parseLong(text(day.end())))
        .isEqualTo((number + 1) * width)
        .isGreaterThan(deadline);
    assertThat(Long.parseLong(text(day.px()))).isEqualTo((number + 1) * width - now);
    assertThat(text(second.member())).startsWith("a."); // the narrowest, 2^10 ms
    assertThat(text(CompactLayout.bucketFor(Long.MAX_VALUE, now).member())).isEqualTo("f");
    assertThat(CompactLayout.bucketFor(Long.MAX_VALUE, now).px()).isEmpty();
    assertThat(text(CompactLayout.bucketFor(now + 200L * 366 * 24 * HOUR, now).member()))
        .isEqualTo("f");
    assertThat(CompactLayout.isBucket(bytes("p{s/t|1}:o.abc"))).isTrue();
    assertThat(CompactLayout.isBucket(bytes("p{s/t|1}:f"))).isTrue();
    assertThat(CompactLayout.isBucket(bytes("p{s/t|1}:d"))).isFalse();
    assertThat(CompactLayout.isBucket(bytes("p{s/t|1}:r:" + VECTOR.toHex()))).isFalse();
  }

  @Test
  void valueFormatIsStable() {
    byte[] v = CompactFormat.inFlight(0x0102030405060708L, 1000, 2000, null);

    assertThat(HexFormat.of().formatHex(v))
        .isEqualTo("c0" + "0102030405060708" + "00000000000003e8" + "00000000000007d0");
    StoredEntry e = CompactFormat.decode(v, null, "k");
    assertThat(e.state()).isEqualTo(StoredEntry.State.IN_FLIGHT);
    assertThat(e.token()).isEqualTo(0x0102030405060708L);
    assertThat(e.fingerprint()).isNull();
    Fingerprint fp = Fingerprint.sha256(new byte[] {1});
    assertThat(CompactFormat.inFlight(1, 2, 3, fp)).hasSize(57);
    assertThat(CompactFormat.decode(CompactFormat.inFlight(1, 2, 3, fp), null, "k").fingerprint())
        .isEqualTo(fp);
  }

  @Test
  void keysShareSmallListpackHashesThatExpireAsAWhole() {
    // given 400 keys committed with a one-hour window on 4 shards
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    try (RedisDedupStore store = open(prefix, 4)) {
      List<ReserveRequest> reserves = new ArrayList<>();
      List<CommitRequest> commits = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        DedupKey k = randomKey();
        reserves.add(new ReserveRequest(SCOPE, k, null, i + 1, now, 30_000, ttl));
        commits.add(new CommitRequest(SCOPE, k, i + 1, now, ttl, null));
      }
      store.reserveAll(reserves);
      store.commitAll(commits);

      // then Redis holds 4 directories and a few bucket hashes, each listpack-encoded, each
      // expiring after the last deadline in it and within a quarter window more
      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
      List<byte[]> keys = keys(prefix);
      long buckets = 0;
      long fields = 0;
      for (byte[] k : keys) {
        String name = text(k);
        if (name.endsWith(":d")) {
          assertThat(redis.type(k)).isEqualTo("zset");
          continue;
        }
        assertThat(CompactLayout.isBucket(k)).as(name).isTrue();
        buckets++;
        fields += redis.hlen(k);
        assertThat(redis.objectEncoding(k)).as(name).isEqualTo("listpack");
        assertThat(redis.pttl(k)).isBetween(HOUR - 60_000, HOUR + HOUR / 4 + 60_000);
      }
      assertThat(keys.size() - buckets).isEqualTo(4);
      assertThat(buckets).isBetween(4L, 8L);
      assertThat(fields).isEqualTo(400);

      // when cleared, then every key is counted once and nothing is left
      assertThat(store.clear(SCOPE)).isEqualTo(400);
      assertThat(keys(prefix)).isEmpty();
    }
  }

  @Test
  void aSlidingHitMovesTheKeyToALaterBucketAndLeavesItInOnlyOne() {
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.SLIDING);
    DedupKey key = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, key, null, 7, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, key, 7, now, ttl, null));
      List<String> before = bucketsHolding(prefix, key);

      // when hit half a window later (buckets are at most a quarter window wide)
      long later = now + HOUR / 2;
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, key, null, 8, later, 30_000, ttl));

      // then it is a duplicate with the refreshed deadline, held by one later bucket only
      assertThat(hit).isEqualTo(new ReserveResult.Duplicate(now, later + HOUR, null));
      List<String> after = bucketsHolding(prefix, key);
      assertThat(before).hasSize(1);
      assertThat(after).hasSize(1).doesNotContainAnyElementsOf(before);
    }
  }

  @Test
  void aLongResultLivesInItsOwnKeyWithTheEntrysExpiryAndGoesWithIt() {
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    DedupKey shortKey = randomKey();
    DedupKey longKey = randomKey();
    byte[] big = new byte[1000];
    ThreadLocalRandom.current().nextBytes(big);
    try (RedisDedupStore store = open(prefix, 1)) {
      CompactLayout layout = new CompactLayout(prefix, 1);
      store.reserve(new ReserveRequest(SCOPE, shortKey, null, 1, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, shortKey, 1, now, ttl, bytes("ok")));
      store.reserve(new ReserveRequest(SCOPE, longKey, null, 2, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, longKey, 2, now, ttl, big));

      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
      byte[] resultKey = layout.resultKey(SCOPE, longKey);
      assertThat(redis.exists(layout.resultKey(SCOPE, shortKey))).isZero();
      assertThat(redis.get(resultKey)).isEqualTo(big);
      assertThat(redis.pttl(resultKey)).isBetween(HOUR - 60_000, HOUR);
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, longKey, null, 3, now + 1, 1, ttl));
      assertThat(hit).isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(((ReserveResult.Duplicate) hit).result()).isEqualTo(big);

      assertThat(store.forget(SCOPE, longKey)).isTrue();
      assertThat(redis.exists(resultKey)).isZero();
    }
  }

  @Test
  void aBucketThatRedisDroppedWhenItsLastKeyLeftGetsItsExpiryBackWhenWrittenAgain() {
    // given a bucket whose only key was forgotten (Redis drops the empty hash; the directory still
    // lists the bucket)
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    DedupKey first = randomKey();
    DedupKey second = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, first, null, 1, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, first, 1, now, ttl, null));
      String bucket = bucketsHolding(prefix, first).get(0);
      assertThat(store.forget(SCOPE, first)).isTrue();
      assertThat(SharedRedis.admin().exists(bytes(bucket))).isZero();

      // when another key goes into the same bucket
      store.reserve(new ReserveRequest(SCOPE, second, null, 2, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, second, 2, now, ttl, null));

      // then the bucket exists again and expires again
      assertThat(bucketsHolding(prefix, second)).containsExactly(bucket);
      assertThat(SharedRedis.admin().pttl(bytes(bucket))).isBetween(HOUR - 60_000, HOUR + HOUR / 4);
    }
  }

  @Test
  void keysWithoutAWindowGoToABucketThatNeverExpires() {
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    DedupKey key = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, key, null, 1, now, 30_000, Ttl.NONE));
      store.commit(new CommitRequest(SCOPE, key, 1, now, Ttl.NONE, null));

      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
      String base = new CompactLayout(prefix, 1).shardBase(SCOPE, key);
      assertThat(bucketsHolding(prefix, key)).containsExactly(base + ":f");
      assertThat(redis.pttl(bytes(base + ":f"))).isEqualTo(-1);
      assertThat(redis.pttl(bytes(base + ":d"))).isEqualTo(-1);
    }
  }

  private String newPrefix() {
    String p = SharedRedis.uniquePrefix();
    prefixes.add(p);
    return p;
  }

  private static RedisDedupStore open(String prefix, int shards) {
    return RedisDedupStore.builder(SharedRedis.client())
        .prefix(prefix)
        .layout(RedisDedupStoreConfig.Layout.COMPACT)
        .compactShards(shards)
        .commandTimeout(Duration.ofSeconds(15))
        .build();
  }

  private static List<String> bucketsHolding(String prefix, DedupKey key) {
    RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
    List<String> out = new ArrayList<>();
    for (byte[] k : keys(prefix)) {
      if (CompactLayout.isBucket(k) && redis.hexists(k, key.toBytes())) {
        out.add(text(k));
      }
    }
    return out;
  }

  private static List<byte[]> keys(String prefix) {
    RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
    ScanArgs args = new ScanArgs().match(bytes(prefix.replace("*", "\\*") + "*")).limit(1000);
    List<byte[]> out = new ArrayList<>();
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      KeyScanCursor<byte[]> page = redis.scan(cursor, args);
      out.addAll(page.getKeys());
      cursor = page;
    } while (!cursor.isFinished());
    return out;
  }

  private static DedupKey randomKey() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return DedupKey.ofWords(r.nextLong(), r.nextLong(), r.nextLong(), r.nextLong());
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
