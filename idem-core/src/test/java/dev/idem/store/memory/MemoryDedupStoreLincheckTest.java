package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of reserve, commit, release and inspect, checked by Lincheck against the store
 * itself run sequentially. Three keys share a scope bounded to two, so concurrent reserves also
 * race evictions and the "full of reservations" refusal; tokens repeat, so stale settlements race
 * live ones.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:2")
@Param(name = "token", gen = IntGen.class, conf = "1:3")
public class MemoryDedupStoreLincheckTest {
  private static final Scope SCOPE = Scope.of("lincheck");
  private static final long NOW = 1_000;
  private static final DedupKey[] KEYS = {
    DedupKey.ofWords(1, 2, 3, 4), DedupKey.ofWords(5, 6, 7, 8), DedupKey.ofWords(0, 0, 0, 9),
  };

  private final MemoryDedupStore store = MemoryDedupStore.builder().maxKeysPerScope(2).build();

  /**
   * Reserves a key.
   *
   * @param key which key
   * @param token the fencing token
   * @return the outcome, or "full" when the scope holds only reservations
   */
  @Operation
  public Object reserve(@Param(name = "key") int key, @Param(name = "token") int token) {
    try {
      ReserveResult r =
          store.reserve(new ReserveRequest(SCOPE, KEYS[key], null, token, NOW, 60_000, Ttl.NONE));
      return r;
    } catch (StoreException e) {
      return "full";
    }
  }

  /**
   * Commits a key.
   *
   * @param key which key
   * @param token the fencing token
   * @return applied or stale
   */
  @Operation
  public SettleResult commit(@Param(name = "key") int key, @Param(name = "token") int token) {
    return store.commit(new CommitRequest(SCOPE, KEYS[key], token, NOW, Ttl.NONE, null));
  }

  /**
   * Releases a key.
   *
   * @param key which key
   * @param token the fencing token
   * @return applied or stale
   */
  @Operation
  public SettleResult release(@Param(name = "key") int key, @Param(name = "token") int token) {
    return store.release(new ReleaseRequest(SCOPE, KEYS[key], token, NOW));
  }

  /**
   * Reads a key.
   *
   * @param key which key
   * @return its state
   */
  @Operation
  public KeyState inspect(@Param(name = "key") int key) {
    return store.inspect(SCOPE, KEYS[key], NOW);
  }

  @Test
  void stress() {
    new StressOptions()
        .iterations(20)
        .invocationsPerIteration(1_000)
        .threads(3)
        .actorsPerThread(3)
        .actorsBefore(2)
        .check(getClass());
  }

  @Test
  void modelChecking() {
    new ModelCheckingOptions()
        .iterations(15)
        .invocationsPerIteration(200)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .check(getClass());
  }
}
