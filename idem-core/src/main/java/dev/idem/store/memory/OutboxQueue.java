package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.PendingEntry;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One outbox queue of the memory store: entries in append order (ids grow with it), and the dead
 * letters given up on. Every method is synchronized on the queue; {@link MemoryDedupStore} appends
 * while holding the commit's segment lock (segment, then queue: never the other way round).
 *
 * <p>Ordering keys: ids are given and entries appended under the queue's monitor, so append order
 * is id order; a claim walks the entries in that order and hands out an entry with an ordering key
 * only if no earlier entry of its key is still there (it is the key's head).
 */
final class OutboxQueue {
  private final String name;
  private final int deadLetterLimit;
  private final LinkedHashMap<Long, Entry> entries = new LinkedHashMap<>();
  private final ArrayDeque<DeadLetter> deadLetters = new ArrayDeque<>();

  /** The ordering key a dead letter had (none: absent), for its requeue. */
  private final HashMap<Long, String> deadOrderingKeys = new HashMap<>();

  private long lastId;

  OutboxQueue(String name, int deadLetterLimit) {
    this.name = name;
    this.deadLetterLimit = deadLetterLimit;
  }

  private static final class Entry {
    final long id;
    final DedupKey key;
    final byte[] payload;
    final @Nullable String orderingKey;
    final long enqueuedAtMillis;
    int attempts;
    long claimedUntilMillis = Long.MIN_VALUE;
    long notBeforeMillis = Long.MIN_VALUE;
    @Nullable String lastError;

    Entry(
        long id,
        DedupKey key,
        byte[] payload,
        @Nullable String orderingKey,
        long enqueuedAtMillis) {
      this.id = id;
      this.key = key;
      this.payload = payload;
      this.orderingKey = orderingKey;
      this.enqueuedAtMillis = enqueuedAtMillis;
    }
  }

  synchronized void append(
      DedupKey key, byte[] payload, @Nullable String orderingKey, long nowMillis) {
    long id = ++lastId;
    entries.put(id, new Entry(id, key, payload, orderingKey, nowMillis));
  }

  synchronized List<OutboxRecord> claim(int max, long nowMillis, long claimMillis) {
    List<OutboxRecord> out = new ArrayList<>(Math.min(max, 16));
    long until = nowMillis + claimMillis;
    if (until < nowMillis) {
      until = Long.MAX_VALUE;
    }
    Set<String> headsSeen = null;
    for (Iterator<Entry> it = entries.values().iterator(); it.hasNext() && out.size() < max; ) {
      Entry e = it.next();
      if (e.orderingKey != null) {
        if (headsSeen == null) {
          headsSeen = new HashSet<>();
        }
        if (!headsSeen.add(e.orderingKey)) {
          continue; // not the head of its key: it waits for the earlier one to be settled
        }
      }
      if (e.claimedUntilMillis <= nowMillis && e.notBeforeMillis <= nowMillis) {
        e.claimedUntilMillis = until;
        e.attempts++;
        out.add(
            new OutboxRecord(
                e.id, name, e.key, e.payload, e.attempts, e.enqueuedAtMillis, e.lastError));
      }
    }
    return out;
  }

  /** Whether the entry is there and, unless {@code claim} is negative, still under that claim. */
  private @Nullable Entry entry(long id, int claim) {
    Entry e = entries.get(id);
    return e == null || (claim >= 0 && e.attempts != claim) ? null : e;
  }

  /** Acknowledges; {@code claim} is the attempts of the claim that delivered it, or -1 for any. */
  synchronized boolean acknowledge(long id, int claim) {
    return entry(id, claim) != null && entries.remove(id) != null;
  }

  synchronized boolean reschedule(long id, int claim, long notBeforeMillis, String error) {
    Entry e = entry(id, claim);
    if (e == null) {
      return false;
    }
    e.claimedUntilMillis = Long.MIN_VALUE;
    e.notBeforeMillis = notBeforeMillis;
    e.lastError = error;
    return true;
  }

  synchronized boolean deadLetter(long id, int claim, String reason, long nowMillis) {
    if (entry(id, claim) == null) {
      return false;
    }
    Entry e = entries.remove(id);
    if (deadLetters.size() == deadLetterLimit) {
      deadOrderingKeys.remove(deadLetters.removeFirst().id());
    }
    if (e.orderingKey != null) {
      deadOrderingKeys.put(e.id, e.orderingKey);
    }
    deadLetters.addLast(
        new DeadLetter(
            e.id, name, e.key, e.payload, e.attempts, e.enqueuedAtMillis, nowMillis, reason));
    return true;
  }

  synchronized List<DeadLetter> deadLetters(int limit) {
    List<DeadLetter> out = new ArrayList<>(Math.min(limit, deadLetters.size()));
    for (DeadLetter d : deadLetters) {
      if (out.size() == limit) {
        break;
      }
      out.add(d);
    }
    return out;
  }

  synchronized List<DeadLetter> deadLetters(DeadLetterQuery query) {
    List<DeadLetter> out = new ArrayList<>();
    for (DeadLetter d : deadLetters) {
      if (query.matches(d)) {
        out.add(d);
      }
    }
    out.sort(DeadLetterQuery.NEWEST_FIRST);
    return out.size() > query.limit() ? List.copyOf(out.subList(0, query.limit())) : out;
  }

  synchronized Optional<DeadLetter> findDeadLetter(long id) {
    for (DeadLetter d : deadLetters) {
      if (d.id() == id) {
        return Optional.of(d);
      }
    }
    return Optional.empty();
  }

  /**
   * Moves a dead letter back to the end of the queue, untried, under a new id, with the ordering
   * key it had: appended last, it is its key's head only if no other entry of the key waits.
   */
  synchronized OptionalLong requeue(long id, long nowMillis) {
    for (Iterator<DeadLetter> it = deadLetters.iterator(); it.hasNext(); ) {
      DeadLetter d = it.next();
      if (d.id() == id) {
        it.remove();
        long newId = ++lastId;
        String orderingKey = deadOrderingKeys.remove(id);
        entries.put(newId, new Entry(newId, d.key(), d.payload(), orderingKey, nowMillis));
        return OptionalLong.of(newId);
      }
    }
    return OptionalLong.empty();
  }

  synchronized boolean purgeDeadLetter(long id) {
    deadOrderingKeys.remove(id);
    return deadLetters.removeIf(d -> d.id() == id);
  }

  synchronized long purgeDeadLetters() {
    long n = deadLetters.size();
    deadLetters.clear();
    deadOrderingKeys.clear();
    return n;
  }

  synchronized List<PendingEntry> pending(int limit) {
    List<PendingEntry> out = new ArrayList<>(Math.min(limit, entries.size()));
    for (Entry e : entries.values()) {
      if (out.size() == limit) {
        break;
      }
      long available = Math.max(e.claimedUntilMillis, e.notBeforeMillis);
      out.add(
          new PendingEntry(
              e.id,
              name,
              e.key,
              e.payload,
              e.attempts,
              e.enqueuedAtMillis,
              available == Long.MIN_VALUE ? e.enqueuedAtMillis : available,
              e.lastError));
    }
    return out;
  }

  synchronized long depth() {
    return entries.size();
  }
}
