package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compact layout at size, on a private redis-server with its default settings: one full window
 * of keys loaded through the store (batches of 1,000 on several connections), then bytes per key,
 * the encoding of every shard hash, exact answers on a sample, a sliding hit and a shard hash that
 * leaves by its own expiry. 50,000 keys in the default build (seconds); {@code -Psoak} loads
 * 10,000,000 (minutes, about 700 MB of Redis): {@code idem.redis.compact.keys}.
 */
class RedisCompactScaleTest {
  private static final Scope SCOPE = Scope.of("scale", "dedup");
  private static final Scope SHORT = Scope.of("scale", "short");
  private static final String PREFIX = "idem:";
  private static final String SHORT_PREFIX = "idem-short:";
  private static final long HOUR = 3_600_000;
  private static final long WINDOW = 24 * HOUR;
  private static final long LEASE = 30_000;
  private static final int BATCH = 1000;
  private static final int CONNECTIONS = 4;
  private static final int SAMPLE = 10_000;

  @TempDir Path dir;

  private RedisProcess redis;
  private RedisClient adminClient;
  private StatefulRedisConnection<byte[], byte[]> admin;

  @BeforeEach
  void startRedis() throws IOException {
    redis = RedisProcess.start(dir, "--maxmemory-policy", "noeviction");
    adminClient = RedisClient.create(redis.uri());
    admin = adminClient.connect(ByteArrayCodec.INSTANCE);
    admin.setTimeout(Duration.ofSeconds(120));
  }

  @AfterEach
  void stopRedis() {
    try {
      if (adminClient != null) {
        adminClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    } finally {
      redis.stop();
    }
  }

  @Test
  void aFullWindowStaysUnder80BytesPerKeyInListpackHashesAndAnswersExactly() throws Exception {
    long keys = Long.getLong("idem.redis.compact.keys", 50_000);
    int shards = (int) Math.max(1, keys / 25);
    long t0 = System.currentTimeMillis();
    Ttl ttl = new Ttl(WINDOW, Expiry.SLIDING);
    RedisCommands<byte[], byte[]> sync = admin.sync();
    try (RedisDedupStore store = open(PREFIX, shards)) {
      // given one full window of committed keys, loaded on several connections that are closed
      // before measuring (so that no client buffer is counted; the scripts are loaded before)
      long before = usedMemory();
      long start = System.nanoTime();
      List<RedisDedupStore> loaders = new ArrayList<>();
      try {
        for (int c = 0; c < CONNECTIONS; c++) {
          loaders.add(open(PREFIX, shards));
        }
        load(loaders, keys, ttl, t0);
      } finally {
        loaders.forEach(RedisDedupStore::close);
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      Awaitility.await() // Redis has let the loaders' connections go: the admin and the store's
          .atMost(Duration.ofSeconds(30))
          .until(() -> stat("clients", "connected_clients") == 2);
      long after = usedMemory();
      double perKey = (after - before) / (double) keys;
      System.out.printf(
          "compact scale: keys=%d shards=%d used_memory_delta=%d bytes_per_key=%.1f"
              + " load_seconds=%.1f keys_per_sec=%.0f%n",
          keys, shards, after - before, perKey, seconds, keys / seconds);

      // then the layout costs at most 80 bytes a key
      assertThat(perKey).as("bytes per key").isLessThanOrEqualTo(80.0);

      // and Redis holds one hash per shard (no result keys), every one listpack-encoded, with its
      // meta field, under hash-max-listpack-entries, and all the keys in them
      CompactLayout layout = new CompactLayout(PREFIX, shards);
      assertThat(sync.dbsize()).isEqualTo((long) shards);
      assertThat(text(layout.shardHash(SCOPE, key(0))))
          .isEqualTo(text(hashOfShard(PREFIX, SCOPE, shardOf(key(0), shards))));
      HashCensus census = census(shardHashes(shards));
      assertThat(census.notListpack).as("hashes not listpack-encoded").isEmpty();
      assertThat(census.entries).isEqualTo(keys);
      assertThat(census.maxFields).isLessThan(128);

      // and a sample of the keys answers duplicate, keys never loaded answer new
      long probe = t0 + 1_000;
      List<ReserveRequest> seen = new ArrayList<>();
      List<ReserveRequest> unseen = new ArrayList<>();
      for (int j = 0; j < Math.min(SAMPLE, keys); j++) {
        long i = j * (keys / Math.min(SAMPLE, keys));
        seen.add(new ReserveRequest(SCOPE, key(i), null, 2 * keys + j + 1, probe, LEASE, ttl));
        unseen.add(
            new ReserveRequest(SCOPE, key(keys + i), null, 2 * keys + j + 1, probe, LEASE, ttl));
      }
      for (ReserveResult r : store.reserveAll(seen)) {
        assertThat(r).isInstanceOf(ReserveResult.Duplicate.class);
        assertThat(((ReserveResult.Duplicate) r).committedAtMillis()).isEqualTo(t0);
        assertThat(((ReserveResult.Duplicate) r).expiresAtMillis()).isEqualTo(probe + WINDOW);
      }
      List<ReleaseRequest> releases = new ArrayList<>();
      for (ReserveResult r : store.reserveAll(unseen)) {
        assertThat(r).isInstanceOf(ReserveResult.Acquired.class);
        assertThat(((ReserveResult.Acquired) r).replaced())
            .isEqualTo(ReserveResult.Replaced.NOTHING);
      }
      for (ReserveRequest u : unseen) {
        releases.add(new ReleaseRequest(SCOPE, u.key(), u.token(), probe));
      }
      assertThat(store.releaseAll(releases)).containsOnly(SettleResult.APPLIED);

      // when a key is hit half a window later (sliding)
      DedupKey hitKey = key(keys / 2 + 1);
      byte[] hash = layout.shardHash(SCOPE, hitKey);
      long fieldsBefore = sync.hlen(hash);
      long pttlBefore = sync.pttl(hash);
      assertThat(EntryFormat.getLong(sync.hget(hash, CompactLayout.META_FIELD), 16))
          .isEqualTo(t0 + WINDOW + WINDOW / 8);
      long later = t0 + WINDOW / 2;
      ReserveResult hit =
          store.reserve(new ReserveRequest(SCOPE, hitKey, null, 1, later, LEASE, ttl));

      // then its entry carries the later deadline in place (the key keeps its one field), and the
      // hash's end (meta field) moved to that deadline plus a sweep interval, its expiry with it
      assertThat(hit).isEqualTo(new ReserveResult.Duplicate(t0, later + WINDOW, null));
      assertThat(sync.hlen(hash)).isEqualTo(fieldsBefore);
      byte[] entry = sync.hget(hash, hitKey.toBytes());
      assertThat(EntryFormat.getLong(entry, 17)).isEqualTo(later + WINDOW);
      byte[] meta = sync.hget(hash, CompactLayout.META_FIELD);
      assertThat(EntryFormat.getLong(meta, 16)).isEqualTo(later + WINDOW + WINDOW / 8);
      assertThat(sync.pttl(hash)).isGreaterThan(pttlBefore).isGreaterThan(WINDOW);
      assertThat(sync.objectEncoding(hash)).isEqualTo("listpack");
    }
  }

  @Test
  void aShardHashWhoseKeysAllExpiredLeavesByItsOwnExpiryNotByDeletes() throws Exception {
    // given 1,000 keys with a 5 s window in 40 shard hashes, next to keys with a 24 h window
    RedisCommands<byte[], byte[]> sync = admin.sync();
    int shards = 40;
    long now = System.currentTimeMillis();
    Ttl shortTtl = new Ttl(5_000, Expiry.FIXED);
    Ttl dayTtl = new Ttl(WINDOW, Expiry.FIXED);
    try (RedisDedupStore shortStore = open(SHORT_PREFIX, shards);
        RedisDedupStore dayStore = open(PREFIX, shards)) {
      load(List.of(dayStore), 1_000, dayTtl, now);
      long expiredBefore = stat("stats", "expired_keys");
      long hdelBefore = commandCalls("hdel");
      List<ReserveRequest> reserves = new ArrayList<>();
      List<CommitRequest> commits = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        reserves.add(new ReserveRequest(SHORT, key(i), null, i + 1, now, 1_000, shortTtl));
        commits.add(new CommitRequest(SHORT, key(i), i + 1, now, shortTtl, null));
      }
      assertThat(shortStore.reserveAll(reserves))
          .allMatch(ReserveResult.Acquired.class::isInstance);
      assertThat(shortStore.commitAll(commits)).containsOnly(SettleResult.APPLIED);
      List<byte[]> shortHashes = shardHashesOf(SHORT_PREFIX, SHORT, shards);
      for (byte[] h : shortHashes) {
        // the window plus one sweep interval (1,024 ms), counted from the caller's now
        assertThat(sync.pttl(h)).as(text(h)).isBetween(1L, 5_000L + 1_024L);
      }

      // when the window and the sweep interval have passed
      Awaitility.await()
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> sync.exists(shortHashes.toArray(new byte[0][])) == 0);

      // then each short shard hash went as a whole, by one expiry each, with no entry deleted one
      // by one, and the 24 h keys are all there
      assertThat(stat("stats", "expired_keys") - expiredBefore).isEqualTo(shards);
      assertThat(commandCalls("hdel")).isEqualTo(hdelBefore);
      assertThat(sync.dbsize()).isEqualTo((long) shards);
      assertThat(census(shardHashesOf(PREFIX, SCOPE, shards)).entries).isEqualTo(1_000);
    }
  }

  /** Loads keys {@code 0..keys-1}, committed at {@code now}, in batches spread over the stores. */
  private static void load(List<RedisDedupStore> stores, long keys, Ttl ttl, long now)
      throws Exception {
    long batches = (keys + BATCH - 1) / BATCH;
    ExecutorService pool = Executors.newFixedThreadPool(stores.size());
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < stores.size(); c++) {
        int lane = c;
        RedisDedupStore store = stores.get(c);
        done.add(
            pool.submit(
                () -> {
                  for (long b = lane; b < batches; b += stores.size()) {
                    loadBatch(store, b * BATCH, Math.min(keys, (b + 1) * BATCH), ttl, now);
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(30, TimeUnit.SECONDS);
    }
  }

  private static void loadBatch(RedisDedupStore store, long from, long to, Ttl ttl, long now) {
    List<ReserveRequest> reserves = new ArrayList<>((int) (to - from));
    List<CommitRequest> commits = new ArrayList<>((int) (to - from));
    for (long i = from; i < to; i++) {
      reserves.add(new ReserveRequest(SCOPE, key(i), null, i + 1, now, LEASE, ttl));
      commits.add(new CommitRequest(SCOPE, key(i), i + 1, now, ttl, null));
    }
    for (ReserveResult r : store.reserveAll(reserves)) {
      if (!(r instanceof ReserveResult.Acquired)) {
        throw new AssertionError("a new key answered " + r);
      }
    }
    for (SettleResult r : store.commitAll(commits)) {
      if (r != SettleResult.APPLIED) {
        throw new AssertionError("a commit of a new key answered " + r);
      }
    }
  }

  /** Key {@code i}: a fixed mix of {@code i}, so a key is known again from its index alone. */
  private static DedupKey key(long i) {
    return DedupKey.ofWords(mix(i), mix(i ^ 0x5DEECE66DL), mix(i + 0x9E3779B97F4A7C15L), i);
  }

  /** SplitMix64's finalizer: a bijection that spreads consecutive indices over all shards. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private RedisDedupStore open(String prefix, int shards) {
    return RedisDedupStore.builder(redis.uri())
        .prefix(prefix)
        .layout(RedisDedupStoreConfig.Layout.COMPACT)
        .compactShards(shards)
        .commandTimeout(Duration.ofSeconds(120))
        .build();
  }

  private List<byte[]> shardHashes(int shards) {
    return shardHashesOf(PREFIX, SCOPE, shards);
  }

  private static List<byte[]> shardHashesOf(String prefix, Scope scope, int shards) {
    List<byte[]> out = new ArrayList<>(shards);
    for (int s = 0; s < shards; s++) {
      out.add(hashOfShard(prefix, scope, s));
    }
    return out;
  }

  /** The shard of a key: its first word, unsigned, modulo the shards. */
  private static int shardOf(DedupKey key, int shards) {
    return (int) Long.remainderUnsigned(key.word(0), shards);
  }

  /** The name of shard {@code s}'s hash, as docs/stores/redis.md gives it. */
  private static byte[] hashOfShard(String prefix, Scope scope, int s) {
    return (prefix + "{" + scope + "|" + Integer.toHexString(s) + "}:h")
        .getBytes(StandardCharsets.UTF_8);
  }

  /** What the hashes hold: entries (fields less the meta field), the largest, the non-listpack. */
  private record HashCensus(long entries, long maxFields, List<String> notListpack) {}

  /** Asks OBJECT ENCODING and HLEN of every hash, pipelined in chunks of 10,000. */
  private HashCensus census(List<byte[]> hashes) throws Exception {
    RedisAsyncCommands<byte[], byte[]> async = admin.async();
    long entries = 0;
    long max = 0;
    List<String> notListpack = new ArrayList<>();
    for (int from = 0; from < hashes.size(); from += 10_000) {
      List<byte[]> chunk = hashes.subList(from, Math.min(hashes.size(), from + 10_000));
      List<RedisFuture<String>> encodings = new ArrayList<>(chunk.size());
      List<RedisFuture<Long>> lengths = new ArrayList<>(chunk.size());
      for (byte[] h : chunk) {
        encodings.add(async.objectEncoding(h));
        lengths.add(async.hlen(h));
      }
      for (int i = 0; i < chunk.size(); i++) {
        String encoding = encodings.get(i).get(120, TimeUnit.SECONDS);
        long fields = lengths.get(i).get(120, TimeUnit.SECONDS);
        if (!"listpack".equals(encoding)) {
          notListpack.add(text(chunk.get(i)) + "=" + encoding);
        }
        entries += Math.max(0, fields - 1);
        max = Math.max(max, fields);
      }
    }
    return new HashCensus(entries, max, notListpack);
  }

  /** {@code used_memory} after {@code MEMORY PURGE}. */
  private long usedMemory() throws Exception {
    redis.cli("MEMORY", "PURGE");
    return stat("memory", "used_memory");
  }

  private long stat(String section, String name) {
    String info = admin.sync().info(section);
    for (String line : info.split("\r?\n")) {
      if (line.startsWith(name + ":")) {
        return Long.parseLong(line.substring(name.length() + 1).trim());
      }
    }
    throw new AssertionError("INFO " + section + " has no " + name);
  }

  /** How often a command ran inside or outside scripts ({@code INFO commandstats}), 0 if never. */
  private long commandCalls(String command) {
    String info = admin.sync().info("commandstats");
    for (String line : info.split("\r?\n")) {
      if (line.startsWith("cmdstat_" + command + ":calls=")) {
        String rest = line.substring(("cmdstat_" + command + ":calls=").length());
        return Long.parseLong(rest.substring(0, rest.indexOf(',')));
      }
    }
    return 0;
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
