package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The simplest correct store (test code only): {@link DedupStateMachine} over a map under one lock,
 * with LRU bounds per scope, a "durable" {@link Storage} that a reopen keeps, and an outbox. The
 * contract suite must pass on it; the mutants in {@link MutantStores} each break one rule of it.
 */
class ReferenceStore implements DedupStore, OutboxStore {

  /** Everything a reopen keeps. Guarded by itself. */
  static final class Storage {
    final Map<Scope, LinkedHashMap<DedupKey, StoredEntry>> keys = new HashMap<>();
    final Map<String, TreeMap<Long, Item>> outbox = new HashMap<>();
    final Map<String, List<DeadLetter>> deadLetters = new HashMap<>();

    /** The ordering key each dead letter's entry had, by queue and id (absent: none). */
    final Map<String, Map<Long, String>> deadOrderingKeys = new HashMap<>();

    long nextId;
  }

  /** One outbox entry. */
  static final class Item {
    final long id;
    final OutboxMessage message;
    final long enqueuedAt;
    int attempts;
    long hiddenUntil;
    @Nullable String lastError;

    Item(long id, OutboxMessage message, long enqueuedAt) {
      this.id = id;
      this.message = message;
      this.enqueuedAt = enqueuedAt;
    }
  }

  final Storage storage;
  private final int maxKeysPerScope;
  private final StoreCapabilities capabilities;
  private volatile boolean closed;

  ReferenceStore(Storage storage, int maxKeysPerScope, StoreCapabilities capabilities) {
    this.storage = storage;
    this.maxKeysPerScope = maxKeysPerScope;
    this.capabilities = capabilities;
  }

  static StoreCapabilities all() {
    return new StoreCapabilities(true, true, false, true);
  }

  // ---- the dedup lifecycle ----

  @Override
  public ReserveResult reserve(ReserveRequest r) {
    synchronized (storage) {
      LinkedHashMap<DedupKey, StoredEntry> scope = scope(r.scope());
      StoredEntry current = scope.get(r.key());
      Transition<ReserveResult> t = decideReserve(current, r);
      if (t.changed() || t.answer() instanceof ReserveResult.Duplicate) {
        put(r.scope(), r.key(), t.next()); // a duplicate hit is a use
      }
      return t.answer();
    }
  }

  /** The reserve decision (mutants change it). */
  Transition<ReserveResult> decideReserve(@Nullable StoredEntry current, ReserveRequest r) {
    return DedupStateMachine.reserve(current, r);
  }

  @Override
  public SettleResult commit(CommitRequest c) {
    synchronized (storage) {
      return commitLocked(c).answer();
    }
  }

  private Transition<SettleResult> commitLocked(CommitRequest c) {
    Transition<SettleResult> t = DedupStateMachine.commit(scope(c.scope()).get(c.key()), c);
    if (t.changed()) {
      put(c.scope(), c.key(), t.next());
    }
    return t;
  }

  @Override
  public SettleResult release(ReleaseRequest r) {
    synchronized (storage) {
      Transition<SettleResult> t = decideRelease(scope(r.scope()).get(r.key()), r);
      if (t.changed()) {
        put(r.scope(), r.key(), t.next());
      }
      return t.answer();
    }
  }

  /** The release decision (mutants change it). */
  Transition<SettleResult> decideRelease(@Nullable StoredEntry current, ReleaseRequest r) {
    return DedupStateMachine.release(current, r);
  }

  @Override
  public SettleResult extend(ExtendRequest e) {
    synchronized (storage) {
      Transition<SettleResult> t = decideExtend(scope(e.scope()).get(e.key()), e);
      if (t.changed()) {
        put(e.scope(), e.key(), t.next());
      }
      return t.answer();
    }
  }

  /** The extend decision (mutants change it). */
  Transition<SettleResult> decideExtend(@Nullable StoredEntry current, ExtendRequest e) {
    return DedupStateMachine.extend(current, e);
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    synchronized (storage) {
      return DedupStateMachine.inspect(scope(scope).get(key), nowMillis);
    }
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    synchronized (storage) {
      return scope(scope).remove(key) != null;
    }
  }

  @Override
  public long clear(Scope scope) {
    synchronized (storage) {
      open();
      LinkedHashMap<DedupKey, StoredEntry> removed = storage.keys.remove(scope);
      return removed == null ? 0 : removed.size();
    }
  }

  @Override
  public long sweepExpired(long nowMillis) {
    synchronized (storage) {
      open();
      long swept = 0;
      for (LinkedHashMap<DedupKey, StoredEntry> scope : storage.keys.values()) {
        for (Iterator<StoredEntry> it = scope.values().iterator(); it.hasNext(); ) {
          if (it.next().isDeadAt(nowMillis)) {
            it.remove();
            swept++;
          }
        }
      }
      return swept;
    }
  }

  /** Stores {@code entry} (null: removes) as the most recently used, evicting beyond the bound. */
  void put(Scope scope, DedupKey key, @Nullable StoredEntry entry) {
    LinkedHashMap<DedupKey, StoredEntry> map = scope(scope);
    map.remove(key);
    if (entry == null) {
      return;
    }
    map.put(key, entry);
    for (Iterator<DedupKey> it = map.keySet().iterator(); map.size() > maxKeysPerScope; ) {
      DedupKey eldest = it.next();
      if (!eldest.equals(key)) {
        it.remove();
      }
    }
  }

  /** Returns the map of a scope; also checks that the store is open. */
  LinkedHashMap<DedupKey, StoredEntry> scope(Scope scope) {
    open();
    return storage.keys.computeIfAbsent(scope, s -> new LinkedHashMap<>());
  }

  private void open() {
    if (closed) {
      throw new IllegalStateException("the reference store is closed");
    }
  }

  int maxKeysPerScope() {
    return maxKeysPerScope;
  }

  @Override
  public StoreCapabilities capabilities() {
    return capabilities;
  }

  @Override
  public String describe() {
    return "reference:" + getClass().getSimpleName();
  }

  @Override
  public void close() {
    closed = true;
  }

  // ---- the outbox ----

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("commitAndEnqueue needs at least one message");
    }
    synchronized (storage) {
      Transition<SettleResult> t = commitLocked(commit);
      if (t.changed()) {
        // a retried commit (APPLIED, unchanged) already enqueued the first time
        for (OutboxMessage message : messages) {
          long id = ++storage.nextId;
          queue(message.queue()).put(id, new Item(id, message, commit.nowMillis()));
        }
      }
      return t.answer();
    }
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    if (max < 1 || claimMillis < 1) {
      throw new IllegalArgumentException("claim needs max >= 1 and claimMillis >= 1");
    }
    synchronized (storage) {
      List<OutboxRecord> out = new ArrayList<>();
      Set<String> heads = new HashSet<>();
      for (Item item : queue(queue).values()) {
        if (out.size() == max) {
          break;
        }
        String orderingKey = item.message.orderingKey();
        if (orderingKey != null && !heads.add(orderingKey) && keepsOrder()) {
          continue; // an earlier entry of its key is still there
        }
        if (item.hiddenUntil <= nowMillis) {
          item.hiddenUntil = nowMillis + claimMillis;
          item.attempts++;
          out.add(
              new OutboxRecord(
                  item.id,
                  queue,
                  item.message.key(),
                  item.message.payload(),
                  item.attempts,
                  item.enqueuedAt,
                  item.lastError));
        }
      }
      return out;
    }
  }

  /** Whether claims hand out only the head of each ordering key (a mutant says no). */
  boolean keepsOrder() {
    return true;
  }

  /** Whether the fenced settle forms compare the claim (a mutant says no). */
  boolean fences() {
    return true;
  }

  private boolean stillClaimedBy(OutboxRecord claimed) {
    Item item = queue(claimed.queue()).get(claimed.id());
    return item != null && (!fences() || item.attempts == claimed.attempts());
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    synchronized (storage) {
      return queue(queue).remove(id) != null;
    }
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    synchronized (storage) {
      return stillClaimedBy(claimed) && acknowledge(claimed.queue(), claimed.id());
    }
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    synchronized (storage) {
      Item item = queue(queue).get(id);
      if (item != null) {
        item.hiddenUntil = notBeforeMillis;
        item.lastError = error;
      }
    }
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    synchronized (storage) {
      if (!stillClaimedBy(claimed)) {
        return false;
      }
      reschedule(claimed.queue(), claimed.id(), notBeforeMillis, error);
      return true;
    }
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    synchronized (storage) {
      Item item = queue(queue).remove(id);
      if (item != null) {
        if (item.message.orderingKey() != null) {
          storage
              .deadOrderingKeys
              .computeIfAbsent(queue, q -> new HashMap<>())
              .put(id, item.message.orderingKey());
        }
        storage
            .deadLetters
            .computeIfAbsent(queue, q -> new ArrayList<>())
            .add(
                new DeadLetter(
                    id,
                    queue,
                    item.message.key(),
                    item.message.payload(),
                    item.attempts,
                    item.enqueuedAt,
                    nowMillis,
                    reason));
      }
    }
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    synchronized (storage) {
      if (!stillClaimedBy(claimed)) {
        return false;
      }
      deadLetter(claimed.queue(), claimed.id(), reason, nowMillis);
      return true;
    }
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("deadLetters needs limit >= 1");
    }
    synchronized (storage) {
      open();
      List<DeadLetter> all = storage.deadLetters.getOrDefault(queue, List.of());
      return List.copyOf(all.subList(0, Math.min(limit, all.size())));
    }
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    synchronized (storage) {
      open();
      List<DeadLetter> out = new ArrayList<>();
      for (DeadLetter d : storage.deadLetters.getOrDefault(queue, List.of())) {
        if (query.matches(d)) {
          out.add(d);
        }
      }
      out.sort(DeadLetterQuery.NEWEST_FIRST);
      return List.copyOf(out.subList(0, Math.min(query.limit(), out.size())));
    }
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    synchronized (storage) {
      open();
      return storage.deadLetters.getOrDefault(queue, List.of()).stream()
          .filter(d -> d.id() == id)
          .findFirst();
    }
  }

  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    synchronized (storage) {
      Optional<DeadLetter> found = findDeadLetter(queue, id);
      if (found.isEmpty()) {
        return OptionalLong.empty();
      }
      DeadLetter d = found.get();
      storage.deadLetters.get(queue).remove(d);
      String orderingKey = storage.deadOrderingKeys.getOrDefault(queue, Map.of()).get(id);
      forgetOrderingKey(queue, id);
      long newId = ++storage.nextId;
      queue(queue)
          .put(
              newId,
              requeued(
                  new Item(
                      newId,
                      new OutboxMessage(queue, d.key(), d.payload(), orderingKey),
                      nowMillis),
                  d));
      return OptionalLong.of(newId);
    }
  }

  private void forgetOrderingKey(String queue, long id) {
    Map<Long, String> keys = storage.deadOrderingKeys.get(queue);
    if (keys != null) {
      keys.remove(id);
    }
  }

  /** The outbox entry a requeued dead letter becomes; mutants change it. */
  Item requeued(Item fresh, DeadLetter from) {
    return fresh;
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    synchronized (storage) {
      open();
      List<DeadLetter> list = storage.deadLetters.get(queue);
      forgetOrderingKey(queue, id);
      return list != null && list.removeIf(d -> d.id() == id);
    }
  }

  @Override
  public long purgeDeadLetters(String queue) {
    synchronized (storage) {
      open();
      List<DeadLetter> list = storage.deadLetters.remove(queue);
      storage.deadOrderingKeys.remove(queue);
      return list == null ? 0 : list.size();
    }
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("pending needs limit >= 1");
    }
    synchronized (storage) {
      List<PendingEntry> out = new ArrayList<>();
      for (Item item : queue(queue).values()) {
        if (out.size() >= limit) {
          break;
        }
        out.add(
            new PendingEntry(
                item.id,
                queue,
                item.message.key(),
                item.message.payload(),
                item.attempts,
                item.enqueuedAt,
                Math.max(item.hiddenUntil, item.enqueuedAt),
                item.lastError));
      }
      return out;
    }
  }

  @Override
  public long depth(String queue) {
    synchronized (storage) {
      return queue(queue).size();
    }
  }

  private TreeMap<Long, Item> queue(String queue) {
    open();
    return storage.outbox.computeIfAbsent(queue, q -> new TreeMap<>());
  }
}
