package dev.idem.store.memory;

import dev.idem.IdemConfigException;
import dev.idem.Scope;
import java.util.Map;
import java.util.Objects;

/**
 * The settings of a {@link MemoryDedupStore}: how many keys each scope may hold, and how many dead
 * letters each outbox queue keeps. Immutable and validated on construction; usually made by {@link
 * MemoryDedupStore.Builder}.
 *
 * @param maxKeysPerScope the most entries (committed and in flight together) a scope holds unless
 *     {@code maxKeysByScope} says otherwise; 1 to {@value #MAX_KEYS}
 * @param maxKeysByScope per-scope overrides of {@code maxKeysPerScope}, each 1 to {@value
 *     #MAX_KEYS}; copied
 * @param deadLettersPerQueue the most dead letters kept per outbox queue (the oldest is dropped to
 *     make room for a new one); at least 1
 */
public record MemoryStoreConfig(
    int maxKeysPerScope, Map<Scope, Integer> maxKeysByScope, int deadLettersPerQueue) {

  /** The default bound per scope: 10,000 keys, as in the Routecraft seed. */
  public static final int DEFAULT_MAX_KEYS = 10_000;

  /** The default number of dead letters kept per outbox queue. */
  public static final int DEFAULT_DEAD_LETTERS_PER_QUEUE = 10_000;

  /** The largest bound a scope may have: 2<sup>30</sup> keys. */
  public static final int MAX_KEYS = Segment.MAX_KEYS;

  private static final MemoryStoreConfig DEFAULTS =
      new MemoryStoreConfig(DEFAULT_MAX_KEYS, Map.of(), DEFAULT_DEAD_LETTERS_PER_QUEUE);

  /**
   * Validates the fields and copies the map.
   *
   * @throws IdemConfigException if a bound is not allowed
   */
  public MemoryStoreConfig {
    checkMaxKeys("maxKeysPerScope", maxKeysPerScope);
    Objects.requireNonNull(maxKeysByScope, "maxKeysByScope");
    maxKeysByScope.forEach(
        (scope, max) -> {
          Objects.requireNonNull(scope, "maxKeysByScope scope");
          Objects.requireNonNull(max, "maxKeysByScope value");
          checkMaxKeys("maxKeys for scope " + scope, max);
        });
    maxKeysByScope = Map.copyOf(maxKeysByScope);
    if (deadLettersPerQueue < 1) {
      throw new IdemConfigException(
          "deadLettersPerQueue must be at least 1, got "
              + deadLettersPerQueue
              + ": it is how many failed deliveries each outbox queue keeps for an operator");
    }
  }

  /**
   * Returns the defaults: 10,000 keys per scope, 10,000 dead letters per queue.
   *
   * @return the default config
   */
  public static MemoryStoreConfig ofDefaults() {
    return DEFAULTS;
  }

  /**
   * Returns the bound of one scope.
   *
   * @param scope the scope
   * @return its override, or {@link #maxKeysPerScope()}
   */
  public int maxKeysFor(Scope scope) {
    Integer max = maxKeysByScope.get(scope);
    return max == null ? maxKeysPerScope : max;
  }

  static void checkMaxKeys(String what, int value) {
    if (value < 1 || value > MAX_KEYS) {
      throw new IdemConfigException(
          what
              + " must be between 1 and "
              + MAX_KEYS
              + ", got "
              + value
              + ": it bounds the committed and in-flight keys one scope keeps in memory"
              + " (the least recently used committed key is evicted beyond it)");
    }
  }
}
