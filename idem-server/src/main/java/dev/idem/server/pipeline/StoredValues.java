package dev.idem.server.pipeline;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Settlement;
import dev.idem.spi.KeyState;
import org.jspecify.annotations.Nullable;

/**
 * A small value per ordering key kept in the pipeline's store through the dedup SPI: the stored
 * result of a committed key (the ordering key's digest) in a scope of its own. Written only while
 * the writer holds the key's ordering turn (or by an operator), so an update (forget, reserve,
 * commit) never races another writer of the same key while its holders are alive.
 */
final class StoredValues {
  private final Deduplicator records;

  StoredValues(Deduplicator records) {
    this.records = records;
  }

  /** Returns the value, or null if there is none. */
  byte @Nullable [] read(String orderingKey) {
    KeyState state = records.inspect(DedupKey.parseHex(orderingKey));
    return state instanceof KeyState.Committed c ? c.result() : null;
  }

  /** Writes the value; false if another writer's reservation held the key. */
  boolean write(String orderingKey, byte[] value) {
    DedupKey k = DedupKey.parseHex(orderingKey);
    for (int attempt = 0; attempt < 3; attempt++) {
      Decision d = records.reserve(k);
      if (d instanceof Decision.Acquired a) {
        if (a.reservation().commit(value) == Settlement.COMMITTED) {
          return true;
        }
      } else if (d instanceof Decision.Duplicate) {
        records.forget(k);
      } else {
        return false; // another writer's reservation: only after a crash, or best-effort ordering
      }
    }
    return false;
  }

  /** Removes the value; true if there was one. */
  boolean remove(String orderingKey) {
    return records.forget(DedupKey.parseHex(orderingKey));
  }
}
