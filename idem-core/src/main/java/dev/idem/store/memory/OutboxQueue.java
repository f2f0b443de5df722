package dev.idem.store.memory;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.PendingEntry;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * One outbox queue of the memory store: entries in append order (ids grow with it), and the dead
 * letters given up on. Every method is synchronized on the queue; {@link MemoryDedupStore} appends
 * while holding the commit's segment lock (segment, then queue: never the other way round).
 */
final class OutboxQueue {
  private final String name;
  private final int deadLetterLimit;
  private final LinkedHashMap<Long, Entry> entries = new LinkedHashMap<>();
  private final ArrayDeque<DeadLetter> deadLetters = new ArrayDeque<>();
  private long lastId;

  OutboxQueue(String name, int deadLetterLimit) {
    this.name = name;
    this.deadLetterLimit = deadLetterLimit;
  }

  private static final class Entry {
    final long id;
    final DedupKey key;
    final byte[] payload;
    final long enqueuedAtMillis;
    int attempts;
    long claimedUntilMillis = Long.MIN_VALUE;
    long notBeforeMillis = Long.MIN_VALUE;
    @Nullable String lastError;

    Entry(long id, DedupKey key, byte[] payload, long enqueuedAtMillis) {
      this.id = id;
      this.key = key;
      this.payload = payload;
      this.enqueuedAtMillis = enqueuedAtMillis;
    }
  }

  synchronized void append(DedupKey key, byte[] payload, long nowMillis) {
    long id = ++lastId;
    entries.put(id, new Entry(id, key, payload, nowMillis));
  }

  synchronized List<OutboxRecord> claim(int max, long nowMillis, long claimMillis) {
    List<OutboxRecord> out = new ArrayList<>(Math.min(max, 16));
    long until = nowMillis + claimMillis;
    if (until < nowMillis) {
      until = Long.MAX_VALUE;
    }
    for (Iterator<Entry> it = entries.values().iterator(); it.hasNext() && out.size() < max; ) {
      Entry e = it.next();
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

  synchronized boolean acknowledge(long id) {
    return entries.remove(id) != null;
  }

  synchronized void reschedule(long id, long notBeforeMillis, String error) {
    Entry e = entries.get(id);
    if (e != null) {
      e.claimedUntilMillis = Long.MIN_VALUE;
      e.notBeforeMillis = notBeforeMillis;
      e.lastError = error;
    }
  }

  synchronized void deadLetter(long id, String reason, long nowMillis) {
    Entry e = entries.remove(id);
    if (e == null) {
      return;
    }
    if (deadLetters.size() == deadLetterLimit) {
      deadLetters.removeFirst();
    }
    deadLetters.addLast(
        new DeadLetter(
            e.id, name, e.key, e.payload, e.attempts, e.enqueuedAtMillis, nowMillis, reason));
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

  /** Moves a dead letter back to the end of the queue, untried, under a new id. */
  synchronized OptionalLong requeue(long id, long nowMillis) {
    for (Iterator<DeadLetter> it = deadLetters.iterator(); it.hasNext(); ) {
      DeadLetter d = it.next();
      if (d.id() == id) {
        it.remove();
        long newId = ++lastId;
        entries.put(newId, new Entry(newId, d.key(), d.payload(), nowMillis));
        return OptionalLong.of(newId);
      }
    }
    return OptionalLong.empty();
  }

  synchronized boolean purgeDeadLetter(long id) {
    return deadLetters.removeIf(d -> d.id() == id);
  }

  synchronized long purgeDeadLetters() {
    long n = deadLetters.size();
    deadLetters.clear();
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
