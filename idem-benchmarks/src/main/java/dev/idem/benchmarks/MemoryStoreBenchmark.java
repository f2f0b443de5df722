package dev.idem.benchmarks;

import dev.idem.Decision;
import dev.idem.DedupConfig;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.TimeSource;
import dev.idem.internal.Sha256Words;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The memory store next to Camel 4's {@code MemoryIdempotentRepository}, in one run so both see the
 * same machine. Both are bounded to the same number of keys ({@code maxKeys}: 1,000 is Camel's
 * default cache size, 10,000 Idem's default); Idem's scope uses {@code maxKeysPerScope(maxKeys)}
 * (one LRU stripe at 1,000, 16 stripes at 10,000). With unique keys both evict on every insert once
 * full.
 *
 * <ul>
 *   <li>{@code idemReserveCommitUnique}: {@link Deduplicator#reserve} of a new key, then {@code
 *       commit()} of the reservation: what a user calls (default config: 24h sliding window, 5 min
 *       lease; system clock; random token).
 *   <li>{@code idemCoarseClockReserveCommitUnique}: the same with {@code TimeSource.coarse()} (a
 *       clock field refreshed every millisecond instead of two system clock reads per event).
 *   <li>{@code idemStoreReserveCommitUnique}: the same through the store SPI, without the facade.
 *   <li>{@code camelAddConfirmUnique}: {@code add(key)} then {@code confirm(key)} of a new String
 *       key (Camel's eager idempotent consumer path).
 *   <li>{@code idemDuplicate} / {@code idemStoreDuplicate}: reserve of an already committed key
 *       (answers Duplicate, refreshes the sliding window, moves the key to most recently used).
 *   <li>{@code camelAddDuplicate}: {@code add(key)} of an existing key (answers false).
 * </ul>
 *
 * Keys are precomputed per thread, so no run pays for hashing: Idem's as SHA-256 digests of the
 * strings Camel gets. Each thread cycles through a ring of 65,536 keys, more than six times the
 * largest bound, so every reserve meets a key the bound has long evicted; the ring is small enough
 * to stay in the CPU caches, as a key derived for the event at hand is. (A ring of 1,048,576 keys
 * per thread, used before, made each operation also fetch a key object from main memory, at a cost
 * that depended on where the collector had placed the keys: identical code measured 1.9M and 6.8M
 * ops/s in two JVMs.) Run with {@code -t 1} and {@code -t 2}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class MemoryStoreBenchmark {
  static final int UNIQUE = 1 << 16;
  private static final dev.idem.Scope SCOPE = dev.idem.Scope.of("bench");
  private static final Ttl TTL = DedupConfig.ofDefaults().storeTtl();
  private static final long LEASE = DedupConfig.ofDefaults().lease().toMillis();

  /** The bound of both stores: Camel's default cache size, and Idem's default maxKeysPerScope. */
  @Param({"1000", "10000"})
  public int maxKeys;

  MemoryDedupStore store;
  Deduplicator dedup;
  Deduplicator coarseDedup;
  IdempotentRepository camel;
  DedupKey[] duplicates;
  String[] duplicateStrings;
  final AtomicInteger threads = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() {
    store = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).build();
    dedup = Deduplicator.builder(store, SCOPE).build();
    coarseDedup =
        Deduplicator.builder(store, dev.idem.Scope.of("bench-coarse"))
            .timeSource(TimeSource.coarse())
            .build();
    camel = MemoryIdempotentRepository.memoryIdempotentRepository(maxKeys);
    int n = Math.max(1, Math.min(512, maxKeys / 2));
    duplicates = new DedupKey[n];
    duplicateStrings = new String[n];
    MessageDigest sha = Sha256Words.newDigest();
    for (int i = 0; i < n; i++) {
      duplicateStrings[i] = name(-1, i);
      duplicates[i] = digest(sha, duplicateStrings[i]);
      Decision d = dedup.reserve(duplicates[i]);
      ((Decision.Acquired) d).reservation().commit();
      d = coarseDedup.reserve(duplicates[i]);
      ((Decision.Acquired) d).reservation().commit();
      camel.add(duplicateStrings[i]);
      camel.confirm(duplicateStrings[i]);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    store.close();
  }

  static String name(int thread, int i) {
    return new UUID(thread, i).toString();
  }

  static DedupKey digest(MessageDigest sha, String s) {
    return DedupKey.ofDigest(sha.digest(s.getBytes(StandardCharsets.UTF_8)));
  }

  /** Per-thread keys and counters. */
  @State(Scope.Thread)
  public static class Keys {
    DedupKey[] unique;
    String[] uniqueStrings;
    int next;
    int dup;
    long token;

    @Setup(Level.Trial)
    public void setUp(MemoryStoreBenchmark b) {
      int thread = b.threads.getAndIncrement();
      unique = new DedupKey[UNIQUE];
      uniqueStrings = new String[UNIQUE];
      MessageDigest sha = Sha256Words.newDigest();
      for (int i = 0; i < UNIQUE; i++) {
        uniqueStrings[i] = name(thread, i);
        unique[i] = digest(sha, uniqueStrings[i]);
      }
      dup = thread * 7;
      token = ((long) thread + 1) << 40;
    }

    int nextUnique() {
      int i = next;
      next = (i + 1) & (UNIQUE - 1);
      return i;
    }

    int nextDuplicate(int n) {
      int i = dup + 1;
      if (i >= n) {
        i = 0;
      }
      dup = i;
      return i;
    }
  }

  @Benchmark
  public Object idemReserveCommitUnique(Keys k) {
    Decision d = dedup.reserve(k.unique[k.nextUnique()]);
    if (d instanceof Decision.Acquired a) {
      return a.reservation().commit();
    }
    return d;
  }

  @Benchmark
  public Object idemCoarseClockReserveCommitUnique(Keys k) {
    Decision d = coarseDedup.reserve(k.unique[k.nextUnique()]);
    if (d instanceof Decision.Acquired a) {
      return a.reservation().commit();
    }
    return d;
  }

  @Benchmark
  public Object idemStoreReserveCommitUnique(Keys k) {
    DedupKey key = k.unique[k.nextUnique()];
    long token = ++k.token;
    long now = System.currentTimeMillis();
    ReserveResult r = store.reserve(new ReserveRequest(SCOPE, key, null, token, now, LEASE, TTL));
    if (r instanceof ReserveResult.Acquired) {
      return store.commit(new CommitRequest(SCOPE, key, token, now, TTL, null));
    }
    return r;
  }

  @Benchmark
  public boolean camelAddConfirmUnique(Keys k) {
    String key = k.uniqueStrings[k.nextUnique()];
    boolean added = camel.add(key);
    if (added) {
      camel.confirm(key);
    }
    return added;
  }

  @Benchmark
  public Decision idemDuplicate(Keys k) {
    return dedup.reserve(duplicates[k.nextDuplicate(duplicates.length)]);
  }

  @Benchmark
  public Decision idemCoarseClockDuplicate(Keys k) {
    return coarseDedup.reserve(duplicates[k.nextDuplicate(duplicates.length)]);
  }

  @Benchmark
  public ReserveResult idemStoreDuplicate(Keys k) {
    DedupKey key = duplicates[k.nextDuplicate(duplicates.length)];
    return store.reserve(
        new ReserveRequest(SCOPE, key, null, ++k.token, System.currentTimeMillis(), LEASE, TTL));
  }

  @Benchmark
  public boolean camelAddDuplicate(Keys k) {
    return camel.add(duplicateStrings[k.nextDuplicate(duplicateStrings.length)]);
  }
}
