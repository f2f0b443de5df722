package dev.idem.server.support;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The core's reference state machine under one lock, with an outbox: a store for tests of the
 * pipeline and HTTP layers, with a switch that makes it unavailable.
 */
public final class ReferenceStore implements DedupStore, OutboxStore {
  private record K(Scope scope, DedupKey key) {}

  private static final class Entry {
    final long id;
    final OutboxMessage message;
    final long enqueuedAt;
    int attempts;
    long notBefore;
    String lastError;

    Entry(long id, OutboxMessage message, long enqueuedAt) {
      this.id = id;
      this.message = message;
      this.enqueuedAt = enqueuedAt;
    }
  }

  private final Map<K, StoredEntry> entries = new HashMap<>();
  private final Map<String, TreeMap<Long, Entry>> queues = new HashMap<>();
  private final Map<String, List<DeadLetter>> dead = new HashMap<>();
  private long nextId = 1;
  private volatile boolean down;

  /** Makes every call throw {@link StoreUnavailableException} while {@code down} is true. */
  public void down(boolean down) {
    this.down = down;
  }

  private void check() {
    if (down) {
      throw new StoreUnavailableException("reference", false, "the test turned the store off");
    }
  }

  @Override
  public synchronized ReserveResult reserve(ReserveRequest r) {
    check();
    K k = new K(r.scope(), r.key());
    var t = DedupStateMachine.reserve(entries.get(k), r);
    put(k, t.next());
    return t.answer();
  }

  private void put(K k, StoredEntry e) {
    if (e == null) {
      entries.remove(k);
    } else {
      entries.put(k, e);
    }
  }

  @Override
  public synchronized SettleResult commit(CommitRequest c) {
    check();
    K k = new K(c.scope(), c.key());
    var t = DedupStateMachine.commit(entries.get(k), c);
    put(k, t.next());
    return t.answer();
  }

  @Override
  public synchronized SettleResult release(ReleaseRequest r) {
    check();
    K k = new K(r.scope(), r.key());
    var t = DedupStateMachine.release(entries.get(k), r);
    put(k, t.next());
    return t.answer();
  }

  @Override
  public synchronized KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    check();
    return DedupStateMachine.inspect(entries.get(new K(scope, key)), nowMillis);
  }

  @Override
  public synchronized boolean forget(Scope scope, DedupKey key) {
    check();
    return entries.remove(new K(scope, key)) != null;
  }

  @Override
  public synchronized long clear(Scope scope) {
    check();
    long before = entries.size();
    entries.keySet().removeIf(k -> k.scope.equals(scope));
    return before - entries.size();
  }

  @Override
  public void checkHealth() {
    check();
  }

  @Override
  public StoreCapabilities capabilities() {
    return new StoreCapabilities(false, false, false, true);
  }

  @Override
  public String describe() {
    return "reference";
  }

  @Override
  public void close() {}

  @Override
  public synchronized SettleResult commitAndEnqueue(CommitRequest commit, OutboxMessage message) {
    check();
    SettleResult r = commit(commit);
    if (r == SettleResult.APPLIED) {
      long id = nextId++;
      queues
          .computeIfAbsent(message.queue(), q -> new TreeMap<>())
          .put(id, new Entry(id, message, commit.nowMillis()));
    }
    return r;
  }

  @Override
  public synchronized List<OutboxRecord> claim(
      String queue, int max, long nowMillis, long claimMillis) {
    check();
    List<OutboxRecord> out = new ArrayList<>();
    for (Entry e : queues.getOrDefault(queue, new TreeMap<>()).values()) {
      if (out.size() == max) {
        break;
      }
      if (e.notBefore <= nowMillis) {
        e.attempts++;
        e.notBefore = nowMillis + claimMillis;
        out.add(
            new OutboxRecord(
                e.id,
                queue,
                e.message.key(),
                e.message.payload(),
                e.attempts,
                e.enqueuedAt,
                e.lastError));
      }
    }
    return out;
  }

  @Override
  public synchronized boolean acknowledge(String queue, long id) {
    check();
    return queues.getOrDefault(queue, new TreeMap<>()).remove(id) != null;
  }

  @Override
  public synchronized void reschedule(String queue, long id, long notBeforeMillis, String error) {
    check();
    Entry e = queues.getOrDefault(queue, new TreeMap<>()).get(id);
    if (e != null) {
      e.notBefore = notBeforeMillis;
      e.lastError = error;
    }
  }

  @Override
  public synchronized void deadLetter(String queue, long id, String reason, long nowMillis) {
    check();
    Entry e = queues.getOrDefault(queue, new TreeMap<>()).remove(id);
    if (e != null) {
      dead.computeIfAbsent(queue, q -> new ArrayList<>())
          .add(
              new DeadLetter(
                  e.id,
                  queue,
                  e.message.key(),
                  e.message.payload(),
                  e.attempts,
                  e.enqueuedAt,
                  nowMillis,
                  reason));
    }
  }

  @Override
  public synchronized List<DeadLetter> deadLetters(String queue, int limit) {
    check();
    List<DeadLetter> all = dead.getOrDefault(queue, List.of());
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }

  @Override
  public synchronized long depth(String queue) {
    check();
    return queues.getOrDefault(queue, new TreeMap<>()).size();
  }
}
