package dev.idem.server.support;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
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
import dev.idem.store.memory.MemoryDedupStore;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The real memory store behind an off switch: while {@link #down(boolean) down}, every call throws
 * {@link StoreUnavailableException}, as an unreachable Redis or database would.
 */
public final class SwitchableStore implements DedupStore, OutboxStore {
  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private volatile boolean down;
  private volatile Runnable onReserve = () -> {};
  private volatile Runnable onHealth = () -> {};
  private final java.util.concurrent.atomic.AtomicInteger commitsToLose =
      new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean lostCommitsApplied;

  /** Turns the store off (every call fails) or on again. */
  public void down(boolean down) {
    this.down = down;
  }

  /** Runs {@code during} inside each reserve, after the store answered (a stall, for tests). */
  public void onReserve(Runnable during) {
    this.onReserve = during;
  }

  /**
   * Makes the next {@code n} commits fail with {@link StoreUnavailableException} whose outcome is
   * unknown, as a command timeout does: {@code applied} says whether each was carried out anyway
   * (its answer was lost) or never reached the store (cancelled before it was sent).
   */
  public void loseCommits(int n, boolean applied) {
    this.lostCommitsApplied = applied;
    this.commitsToLose.set(n);
  }

  /** Runs {@code during} inside each health check (a stall, for tests). */
  public void onHealth(Runnable during) {
    this.onHealth = during;
  }

  private void check() {
    if (down) {
      throw new StoreUnavailableException("switchable", false, "the test turned the store off");
    }
  }

  @Override
  public ReserveResult reserve(ReserveRequest request) {
    check();
    ReserveResult result = store.reserve(request);
    onReserve.run();
    return result;
  }

  @Override
  public SettleResult commit(CommitRequest request) {
    check();
    if (commitsToLose.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      if (lostCommitsApplied) {
        store.commit(request);
      }
      throw new StoreUnavailableException("switchable", true, "commit: got no answer (the test)");
    }
    return store.commit(request);
  }

  @Override
  public SettleResult extend(ExtendRequest request) {
    check();
    return store.extend(request);
  }

  @Override
  public SettleResult release(ReleaseRequest request) {
    check();
    return store.release(request);
  }

  @Override
  public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
    check();
    return store.inspect(scope, key, nowMillis);
  }

  @Override
  public boolean forget(Scope scope, DedupKey key) {
    check();
    return store.forget(scope, key);
  }

  @Override
  public long clear(Scope scope) {
    check();
    return store.clear(scope);
  }

  @Override
  public void checkHealth() {
    check();
    onHealth.run();
    store.checkHealth();
  }

  @Override
  public StoreCapabilities capabilities() {
    return store.capabilities();
  }

  @Override
  public String describe() {
    return "switchable";
  }

  @Override
  public void close() {
    store.close();
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    check();
    return store.commitAndEnqueue(commit, messages);
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    check();
    return store.claim(queue, max, nowMillis, claimMillis);
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    check();
    return store.acknowledge(queue, id);
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    check();
    store.reschedule(queue, id, notBeforeMillis, error);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    check();
    store.deadLetter(queue, id, reason, nowMillis);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    check();
    return store.acknowledge(claimed);
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    check();
    return store.reschedule(claimed, notBeforeMillis, error);
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    check();
    return store.deadLetter(claimed, reason, nowMillis);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    check();
    return store.deadLetters(queue, limit);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    check();
    return store.deadLetters(queue, query);
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    check();
    return store.findDeadLetter(queue, id);
  }

  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    check();
    return store.requeueDeadLetter(queue, id, nowMillis);
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    check();
    return store.purgeDeadLetter(queue, id);
  }

  @Override
  public long purgeDeadLetters(String queue) {
    check();
    return store.purgeDeadLetters(queue);
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    check();
    return store.pending(queue, limit);
  }

  @Override
  public long depth(String queue) {
    check();
    return store.depth(queue);
  }
}
