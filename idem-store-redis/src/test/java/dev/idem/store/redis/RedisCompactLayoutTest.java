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
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The compact layout's stable names and value format (fixed vectors), and what it leaves in Redis:
 * one small listpack hash per shard that expires as a whole after its last deadline, a key in
 * exactly one field, dead entries swept by a later reserve, long results in their own key. The
 * answers themselves are the contract suite's business ({@link
 * RedisCompactDedupStoreContractTest}).
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
    assertThat(text(layout.shardHash(SCOPE, VECTOR))).isEqualTo("idem:{shop-orders/dedup|d65}:h");
    assertThat(text(layout.resultKey(SCOPE, VECTOR)))
        .isEqualTo("idem:{shop-orders/dedup|d65}:r:" + VECTOR.toHex());
    assertThat(text(new CompactLayout("a*b:", 1).scanPattern(SCOPE)))
        .isEqualTo("a\\*b:\\{shop-orders/dedup|*");
    assertThat(CompactLayout.isShardHash(bytes("p{s/t|1}:h"))).isTrue();
    assertThat(CompactLayout.isShardHash(bytes("p{s/t|1}:r:" + VECTOR.toHex()))).isFalse();
  }

  @Test
  void theSweepIntervalIsAnEighthOfTheWindowAndAtLeastASecond() {
    assertThat(text(CompactLayout.interval(24 * HOUR))).isEqualTo(Long.toString(3 * HOUR));
    assertThat(text(CompactLayout.interval(60_000))).isEqualTo("7500");
    assertThat(text(CompactLayout.interval(10))).isEqualTo("1024");
    assertThat(text(CompactLayout.interval(0))).isEqualTo("1024");
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
  void keysShareOneListpackHashPerShardThatExpiresAsAWhole() {
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

      // then Redis holds 4 hashes, each listpack-encoded with its meta field first, each expiring
      // after the last deadline in it and within an eighth of the window more
      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
      List<byte[]> keys = keys(prefix);
      long fields = 0;
      for (byte[] k : keys) {
        String name = text(k);
        assertThat(CompactLayout.isShardHash(k)).as(name).isTrue();
        assertThat(redis.objectEncoding(k)).as(name).isEqualTo("listpack");
        assertThat(redis.hexists(k, CompactLayout.META_FIELD)).as(name).isTrue();
        fields += redis.hlen(k) - 1;
        assertThat(redis.pttl(k)).isBetween(HOUR - 60_000, HOUR + HOUR / 8 + 60_000);
      }
      assertThat(keys).hasSize(4);
      assertThat(fields).isEqualTo(400);

      // when cleared, then every key is counted once and nothing is left
      assertThat(store.clear(SCOPE)).isEqualTo(400);
      assertThat(keys(prefix)).isEmpty();
    }
  }

  @Test
  void aSlidingHitRefreshesTheEntryInPlaceAndTheHashOutlivesIt() {
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.SLIDING);
    DedupKey key = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, key, null, 7, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, key, 7, now, ttl, null));
      byte[] hash = new CompactLayout(prefix, 1).shardHash(SCOPE, key);

      // when hit half a window later (past the hash's first end, the deadline plus an eighth)
      long later = now + HOUR / 2;
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, key, null, 8, later, 30_000, ttl));

      // then it is a duplicate with the refreshed deadline, and the hash now ends after it (Redis
      // counts the expiry from the caller's now, as the standard layout's PX)
      assertThat(hit).isEqualTo(new ReserveResult.Duplicate(now, later + HOUR, null));
      assertThat(keys(prefix)).hasSize(1);
      assertThat(SharedRedis.admin().pttl(hash)).isBetween(HOUR - 60_000, HOUR + HOUR / 8);
    }
  }

  @Test
  void aReserveThatInsertsSweepsTheShardsDeadEntriesOncePerInterval() {
    // given a dead key and a live key in one shard, with a 2 s window (sweep interval 1,024 ms)
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(2_000, Expiry.FIXED);
    Ttl hour = new Ttl(HOUR, Expiry.FIXED);
    DedupKey dead = randomKey();
    DedupKey live = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, dead, null, 1, now, 1_000, ttl));
      store.commit(new CommitRequest(SCOPE, dead, 1, now, ttl, null));
      store.reserve(new ReserveRequest(SCOPE, live, null, 2, now, 1_000, hour));
      store.commit(new CommitRequest(SCOPE, live, 2, now, hour, null));
      byte[] hash = new CompactLayout(prefix, 1).shardHash(SCOPE, dead);
      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();

      // when new keys are reserved after the dead key's deadline by the caller's clock (which
      // moves on, as real clocks do), until a sweep interval has passed by Redis's clock too
      Awaitility.await()
          .atMost(Duration.ofSeconds(20))
          .pollInterval(Duration.ofMillis(200))
          .until(
              () -> {
                long at = System.currentTimeMillis() + 3_000;
                store.reserve(new ReserveRequest(SCOPE, randomKey(), null, 3, at, 1_000, ttl));
                return !redis.hexists(hash, dead.toBytes());
              });

      // then the dead entry is gone, the live one stays
      assertThat(redis.hexists(hash, live.toBytes())).isTrue();
      assertThat(store.inspect(SCOPE, live, now + 3_000))
          .isNotEqualTo(dev.idem.spi.KeyState.ABSENT);
    }
  }

  @Test
  void aJumpOfTheCallersClockAloneDoesNotSweep() {
    // given a key whose lease ran out by the caller's clock an hour later, in a new shard hash
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(60_000, Expiry.FIXED);
    DedupKey abandoned = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, abandoned, null, 1, now, 60_000, ttl));

      // when another key is reserved at once in real time but an hour later by the caller
      long later = now + HOUR;
      store.reserve(new ReserveRequest(SCOPE, randomKey(), null, 2, later, 60_000, ttl));

      // then no sweep ran (Redis's clock has not moved an interval): the abandoned entry is still
      // there, and its takeover says what it replaced
      ReserveResult takeover =
          store.reserve(new ReserveRequest(SCOPE, abandoned, null, 3, later, 60_000, ttl));
      assertThat(takeover)
          .isEqualTo(
              new ReserveResult.Acquired(3, later + 60_000, ReserveResult.Replaced.EXPIRED_LEASE));
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
  void aHashWhoseEntriesWereAllForgottenKeepsItsExpiry() {
    // given a shard whose only key was forgotten (the hash keeps its meta field and its expiry)
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    DedupKey first = randomKey();
    DedupKey second = randomKey();
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, first, null, 1, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, first, 1, now, ttl, null));
      byte[] hash = new CompactLayout(prefix, 1).shardHash(SCOPE, first);
      assertThat(store.forget(SCOPE, first)).isTrue();
      RedisCommands<byte[], byte[]> redis = SharedRedis.admin();
      assertThat(redis.hlen(hash)).isEqualTo(1);
      assertThat(redis.pttl(hash)).isBetween(HOUR - 60_000, HOUR + HOUR / 8);

      // when another key goes into the same shard
      store.reserve(new ReserveRequest(SCOPE, second, null, 2, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, second, 2, now, ttl, null));

      // then it is there, and the hash still expires
      assertThat(redis.hexists(hash, second.toBytes())).isTrue();
      assertThat(redis.pttl(hash)).isBetween(HOUR - 60_000, HOUR + HOUR / 8);
      assertThat(store.clear(SCOPE)).isEqualTo(1);
    }
  }

  @Test
  void keysWithoutAWindowMakeTheirHashPersistent() {
    String prefix = newPrefix();
    long now = System.currentTimeMillis();
    DedupKey key = randomKey();
    DedupKey windowed = randomKey();
    Ttl ttl = new Ttl(HOUR, Expiry.FIXED);
    try (RedisDedupStore store = open(prefix, 1)) {
      store.reserve(new ReserveRequest(SCOPE, key, null, 1, now, 30_000, Ttl.NONE));
      store.commit(new CommitRequest(SCOPE, key, 1, now, Ttl.NONE, null));
      store.reserve(new ReserveRequest(SCOPE, windowed, null, 2, now, 30_000, ttl));
      store.commit(new CommitRequest(SCOPE, windowed, 2, now, ttl, null));

      byte[] hash = new CompactLayout(prefix, 1).shardHash(SCOPE, key);
      assertThat(SharedRedis.admin().hexists(hash, key.toBytes())).isTrue();
      assertThat(SharedRedis.admin().pttl(hash)).isEqualTo(-1);
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
