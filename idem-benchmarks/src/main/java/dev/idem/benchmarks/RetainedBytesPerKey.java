package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.internal.Sha256Words;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import dev.idem.store.memory.MemoryDedupStore;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Locale;
import java.util.UUID;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;

/**
 * Retained heap per committed key: Idem's {@link MemoryDedupStore} next to Camel 4's {@code
 * MemoryIdempotentRepository}, each filled with the same number of keys (default 1,000,000; first
 * argument) and measured as used heap after garbage collection settles, minus the same measurement
 * taken just before the fill.
 *
 * <p>Camel keeps each key as the String it was given (here a 36-character UUID, a typical message
 * id) in a cache bounded to the key count. Idem keeps each key as its 32-byte SHA-256 digest of
 * that same string, committed with a 24h sliding window and no fingerprint or result, in one scope
 * bounded to the key count. Neither run keeps the inputs: only what the store retains is counted.
 *
 * <pre>java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.RetainedBytesPerKey</pre>
 */
public final class RetainedBytesPerKey {
  private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

  private RetainedBytesPerKey() {}

  /**
   * Fills both stores and prints bytes per key and the ratio.
   *
   * @param args optionally, the key count
   * @throws InterruptedException if interrupted while letting the collector settle
   */
  public static void main(String[] args) throws InterruptedException {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    System.out.printf(
        Locale.ROOT,
        "%,d committed keys; %s %s, max heap %,d MiB%n",
        n,
        System.getProperty("java.vm.name"),
        System.getProperty("java.version"),
        Runtime.getRuntime().maxMemory() >> 20);

    long before = settledUsedHeap();
    MemoryDedupStore idem = fillIdem(n);
    long idemBytes = settledUsedHeap() - before;
    int idemKeys = idem.size(Scope.of("retained"));
    idem.close();
    idem = null;

    before = settledUsedHeap();
    MemoryIdempotentRepository camel = fillCamel(n);
    long camelBytes = settledUsedHeap() - before;
    int camelKeys = camel.getCacheSize();
    camel.stop();
    camel = null;

    double idemPerKey = (double) idemBytes / idemKeys;
    double camelPerKey = (double) camelBytes / camelKeys;
    System.out.printf(
        Locale.ROOT,
        "Idem MemoryDedupStore:            %,d keys, %,d bytes, %.1f bytes/key%n",
        idemKeys,
        idemBytes,
        idemPerKey);
    System.out.printf(
        Locale.ROOT,
        "Camel MemoryIdempotentRepository: %,d keys, %,d bytes, %.1f bytes/key%n",
        camelKeys,
        camelBytes,
        camelPerKey);
    System.out.printf(
        Locale.ROOT,
        "ratio Idem / Camel: %.3f (Camel / Idem: %.1fx)%n",
        idemPerKey / camelPerKey,
        camelPerKey / idemPerKey);
  }

  private static String name(int i) {
    return new UUID(0x1de0_0000_0000_0000L, i).toString();
  }

  private static MemoryDedupStore fillIdem(int n) {
    Scope scope = Scope.of("retained");
    Ttl ttl = new Ttl(24 * 3_600_000L, Expiry.SLIDING);
    MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(n).build();
    MessageDigest sha = Sha256Words.newDigest();
    long now = System.currentTimeMillis();
    for (int i = 0; i < n; i++) {
      DedupKey key = DedupKey.ofDigest(sha.digest(name(i).getBytes(StandardCharsets.UTF_8)));
      store.reserve(new ReserveRequest(scope, key, null, i + 1L, now, 300_000, ttl));
      store.commit(new CommitRequest(scope, key, i + 1L, now, ttl, null));
    }
    return store;
  }

  private static MemoryIdempotentRepository fillCamel(int n) {
    MemoryIdempotentRepository repo =
        (MemoryIdempotentRepository) MemoryIdempotentRepository.memoryIdempotentRepository(n);
    for (int i = 0; i < n; i++) {
      String key = name(i);
      repo.add(key);
      repo.confirm(key);
    }
    return repo;
  }

  /** Used heap once repeated collections stop freeing memory (two readings within 64 KiB). */
  private static long settledUsedHeap() throws InterruptedException {
    long last = Long.MAX_VALUE;
    for (int i = 0; i < 20; i++) {
      System.gc();
      Thread.sleep(100);
      long used = MEMORY.getHeapMemoryUsage().getUsed();
      if (Math.abs(last - used) < 64 * 1024) {
        return used;
      }
      last = used;
    }
    return last;
  }
}
