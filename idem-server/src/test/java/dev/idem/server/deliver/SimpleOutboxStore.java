package dev.idem.server.deliver;

import dev.idem.DedupKey;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A small, obviously correct outbox over sorted maps, for testing the dispatcher without a dedup
 * store: {@link #append} stands in for {@code commitAndEnqueue}. Every method is synchronized.
 */
final class SimpleOutboxStore implements OutboxStore {
  private static final class Entry {
    final long id;
    final String queue;
    final DedupKey key;
    final byte[] payload;
    final long enqueuedAt;
    int attempts;
    long hiddenUntil;
    String lastError;

    Entry(long id, String queue, DedupKey key, byte[] payload, long enqueuedAt) {
      this.id = id;
      this.queue = queue;
      this.key = key;
      this.payload = payload;
      this.enqueuedAt = enqueuedAt;
    }
  }

  private final Map<Long, Entry> entries = new TreeMap<>();
  private final List<DeadLetter> dead = new ArrayList<>();
  private long nextId = 1;

  synchronized long append(String queue, byte[] payload, long nowMillis) {
    long id = nextId++;
    entries.put(id, new Entry(id, queue, DedupKey.ofWords(id, 0, 0, 0), payload, nowMillis));
    return id;
  }

  @Override
  public synchronized SettleResult commitAndEnqueue(CommitRequest commit, OutboxMessage message) {
    throw new UnsupportedOperationException("this test outbox has no keys; use append");
  }

  @Override
  public synchronized List<OutboxRecord> claim(
      String queue, int max, long nowMillis, long claimMillis) {
    List<OutboxRecord> out = new ArrayList<>();
    for (Entry e : entries.values()) {
      if (out.size() == max) {
        break;
      }
      if (e.queue.equals(queue) && e.hiddenUntil <= nowMillis) {
        e.attempts++;
        e.hiddenUntil = nowMillis + claimMillis;
        out.add(
            new OutboxRecord(
                e.id, e.queue, e.key, e.payload, e.attempts, e.enqueuedAt, e.lastError));
      }
    }
    return out;
  }

  @Override
  public synchronized boolean acknowledge(String queue, long id) {
    return entries.remove(id) != null;
  }

  @Override
  public synchronized void reschedule(String queue, long id, long notBeforeMillis, String error) {
    Entry e = entries.get(id);
    if (e != null) {
      e.hiddenUntil = notBeforeMillis;
      e.lastError = error;
    }
  }

  @Override
  public synchronized void deadLetter(String queue, long id, String reason, long nowMillis) {
    Entry e = entries.remove(id);
    if (e != null) {
      dead.add(
          new DeadLetter(
              e.id, e.queue, e.key, e.payload, e.attempts, e.enqueuedAt, nowMillis, reason));
    }
  }

  @Override
  public synchronized List<DeadLetter> deadLetters(String queue, int limit) {
    return dead.stream().filter(d -> d.queue().equals(queue)).limit(limit).toList();
  }

  @Override
  public synchronized long depth(String queue) {
    return entries.values().stream().filter(e -> e.queue.equals(queue)).count();
  }
}
