package dev.idem.server.metrics;

import dev.idem.DedupKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The last decisions of one pipeline (key digest, decision, time), for the console's "recent
 * decisions" page: a fixed-size ring that the dedup listener writes on the request path without a
 * lock, so the oldest entries are overwritten and nothing grows. A reader may miss an entry being
 * written at that moment; it never sees a torn one.
 */
public final class RecentDecisions {
  /** How many decisions a pipeline keeps by default. */
  public static final int DEFAULT_CAPACITY = 200;

  /**
   * One decision.
   *
   * @param atMillis when it was made (wall clock)
   * @param digest the key's 64 hex digits
   * @param decision the decision's tag ({@code pass}, {@code duplicate}, {@code in_flight}, {@code
   *     conflict}, {@code committed}, {@code released}, ...)
   */
  public record Entry(long atMillis, String digest, String decision) {}

  /**
   * What the ring holds: the key itself (its hex digits are made only when the console reads the
   * ring, not on the request path) or digits given as text.
   */
  private record Slot(long atMillis, Object digest, String decision) {
    Entry entry() {
      String hex = digest instanceof DedupKey k ? k.toHex() : (String) digest;
      return new Entry(atMillis, hex, decision);
    }
  }

  private final AtomicReferenceArray<Slot> ring;
  private final AtomicLong next = new AtomicLong();

  /**
   * Creates an empty ring.
   *
   * @param capacity how many decisions to keep, at least 1
   */
  public RecentDecisions(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
    }
    this.ring = new AtomicReferenceArray<>(capacity);
  }

  /**
   * Records a decision, overwriting the oldest one when full.
   *
   * @param atMillis when
   * @param digest the key's hex digits
   * @param decision the decision's tag
   */
  public void record(long atMillis, String digest, String decision) {
    put(new Slot(atMillis, digest, decision));
  }

  /**
   * Records a decision about a key, overwriting the oldest one when full; the key's hex digits are
   * made when the ring is read.
   *
   * @param atMillis when
   * @param key the key
   * @param decision the decision's tag
   */
  public void record(long atMillis, DedupKey key, String decision) {
    put(new Slot(atMillis, key, decision));
  }

  private void put(Slot slot) {
    long i = next.getAndIncrement();
    ring.set((int) (i % ring.length()), slot);
  }

  /**
   * Returns the kept decisions, newest first.
   *
   * @param limit the most to return
   * @return up to {@code limit} decisions
   */
  public List<Entry> newest(int limit) {
    long end = next.get();
    int n = (int) Math.min(Math.min(end, ring.length()), Math.max(0, limit));
    List<Entry> out = new ArrayList<>(n);
    for (long i = end - 1; i >= end - n; i--) {
      Slot e = ring.get((int) (i % ring.length()));
      if (e != null) {
        out.add(e.entry());
      }
    }
    return out;
  }
}
