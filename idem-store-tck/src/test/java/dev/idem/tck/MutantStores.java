package dev.idem.tck;

import dev.idem.TimeSource;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.StoredEntry.State;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Stores that each break one rule of the contract the way real stores have (ignoring the owner on
 * release, check-then-act reserve, FLUSHDB-style clear, ...), and a contract subclass for each.
 * They are static nested classes, so neither Surefire nor JUnit runs them on their own: {@link
 * MutantStoresTest} runs single checks on them and expects those checks to fail.
 */
final class MutantStores {
  private MutantStores() {}

  /** A contract over a store made by {@code factory} from fresh storage and a key bound. */
  abstract static class MutantContract extends DedupStoreContract {
    private final Function<ReferenceStore.Storage, ReferenceStore> factory;

    MutantContract(Function<ReferenceStore.Storage, ReferenceStore> factory) {
      this.factory = factory;
    }

    @Override
    protected StoreCapabilities expectedCapabilities() {
      return ReferenceStore.all();
    }

    @Override
    protected DedupStore newStore(TimeSource time) {
      return factory.apply(new ReferenceStore.Storage());
    }
  }

  // ---- release ignores the token (ShedLock before owner checks were always on) ----

  static final class ReleaseIgnoresToken extends ReferenceStore {
    ReleaseIgnoresToken(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    Transition<SettleResult> decideRelease(@Nullable StoredEntry current, ReleaseRequest r) {
      if (current != null
          && current.state() == State.IN_FLIGHT
          && !current.isDeadAt(r.nowMillis())) {
        return new Transition<>(null, SettleResult.APPLIED, true);
      }
      return DedupStateMachine.release(current, r);
    }
  }

  static final class ReleaseIgnoresTokenContract extends MutantContract {
    ReleaseIgnoresTokenContract() {
      super(ReleaseIgnoresToken::new);
    }
  }

  // ---- extend ignores the token (a lease renewal that checks only "is it in flight") ----

  static final class ExtendIgnoresToken extends ReferenceStore {
    ExtendIgnoresToken(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    Transition<SettleResult> decideExtend(@Nullable StoredEntry current, ExtendRequest e) {
      if (current != null
          && current.state() == State.IN_FLIGHT
          && !current.isDeadAt(e.nowMillis())) {
        ExtendRequest asHolder =
            new ExtendRequest(e.scope(), e.key(), current.token(), e.nowMillis(), e.leaseMillis());
        return DedupStateMachine.extend(current, asHolder);
      }
      return DedupStateMachine.extend(current, e);
    }
  }

  static final class ExtendIgnoresTokenContract extends MutantContract {
    ExtendIgnoresTokenContract() {
      super(ExtendIgnoresToken::new);
    }
  }

  // ---- duplicate hits do not refresh a sliding window ----

  static final class NoSlidingRefresh extends ReferenceStore {
    NoSlidingRefresh(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    Transition<ReserveResult> decideReserve(@Nullable StoredEntry current, ReserveRequest r) {
      Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
      if (current != null && t.answer() instanceof ReserveResult.Duplicate d) {
        return new Transition<>(
            current,
            new ReserveResult.Duplicate(
                d.committedAtMillis(), current.deadlineMillis(), d.result()),
            false);
      }
      return t;
    }
  }

  static final class NoSlidingRefreshContract extends MutantContract {
    NoSlidingRefreshContract() {
      super(NoSlidingRefresh::new);
    }
  }

  // ---- reserve as contains-then-add, without holding the lock across both ----

  static final class CheckThenAct extends ReferenceStore {
    CheckThenAct(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public ReserveResult reserve(ReserveRequest r) {
      KeyState seen = inspect(r.scope(), r.key(), r.nowMillis());
      if (!(seen instanceof KeyState.Absent)) {
        return super.reserve(r);
      }
      Thread.yield(); // the window every check-then-act store has, made a little wider
      synchronized (storage) {
        put(
            r.scope(),
            r.key(),
            new StoredEntry(
                State.IN_FLIGHT, r.token(), r.nowMillis(), r.leaseUntil(), r.fingerprint(), null));
      }
      return new ReserveResult.Acquired(r.token(), r.leaseUntil(), ReserveResult.Replaced.NOTHING);
    }
  }

  static final class CheckThenActContract extends MutantContract {
    CheckThenActContract() {
      super(CheckThenAct::new);
    }
  }

  // ---- commit applies after the lease ran out, if nobody took over ----

  static final class CommitIgnoresLease extends ReferenceStore {
    CommitIgnoresLease(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public SettleResult commit(CommitRequest c) {
      synchronized (storage) {
        StoredEntry current = scope(c.scope()).get(c.key());
        if (current != null
            && current.state() == State.IN_FLIGHT
            && current.token() == c.token()
            && current.isDeadAt(c.nowMillis())) {
          put(
              c.scope(),
              c.key(),
              new StoredEntry(
                  State.COMMITTED,
                  c.token(),
                  c.nowMillis(),
                  c.ttl().expiresAt(c.nowMillis()),
                  current.fingerprint(),
                  c.result()));
          return SettleResult.APPLIED;
        }
      }
      return super.commit(c);
    }
  }

  static final class CommitIgnoresLeaseContract extends MutantContract {
    CommitIgnoresLeaseContract() {
      super(CommitIgnoresLease::new);
    }
  }

  // ---- an empty result comes back as "no result" ----

  static final class LosesEmptyResult extends ReferenceStore {
    LosesEmptyResult(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public SettleResult commit(CommitRequest c) {
      byte[] result = c.result();
      return super.commit(
          result != null && result.length == 0
              ? new CommitRequest(c.scope(), c.key(), c.token(), c.nowMillis(), c.ttl(), null)
              : c);
    }
  }

  static final class LosesEmptyResultContract extends MutantContract {
    LosesEmptyResultContract() {
      super(LosesEmptyResult::new);
    }
  }

  // ---- clear wipes every scope (Camel's SpringRedisIdempotentRepository.clear() and FLUSHDB) ----

  static final class ClearWipesEveryScope extends ReferenceStore {
    ClearWipesEveryScope(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public long clear(dev.idem.Scope scope) {
      synchronized (storage) {
        long n = 0;
        for (var map : storage.keys.values()) {
          n += map.size();
        }
        storage.keys.clear();
        return n;
      }
    }
  }

  static final class ClearWipesEveryScopeContract extends MutantContract {
    ClearWipesEveryScopeContract() {
      super(ClearWipesEveryScope::new);
    }
  }

  // ---- reserveAll decides every element against the state before the batch ----

  static final class SnapshotBatch extends ReferenceStore {
    SnapshotBatch(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
      synchronized (storage) {
        Map<ReserveRequest, StoredEntry> before = new HashMap<>();
        for (ReserveRequest r : requests) {
          before.put(r, scope(r.scope()).get(r.key()));
        }
        List<ReserveResult> out = new ArrayList<>();
        for (ReserveRequest r : requests) {
          Transition<ReserveResult> t = DedupStateMachine.reserve(before.get(r), r);
          if (t.changed()) {
            put(r.scope(), r.key(), t.next());
          }
          out.add(t.answer());
        }
        return out;
      }
    }
  }

  static final class SnapshotBatchContract extends MutantContract {
    SnapshotBatchContract() {
      super(SnapshotBatch::new);
    }
  }

  // ---- commitAndEnqueue appends the message even when the commit is stale ----

  static final class EnqueuesOnStaleCommit extends ReferenceStore {
    EnqueuesOnStaleCommit(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public SettleResult commitAndEnqueue(
        CommitRequest commit, java.util.List<OutboxMessage> messages) {
      synchronized (storage) {
        SettleResult r = commit(commit);
        for (OutboxMessage message : messages) {
          long id = ++storage.nextId;
          storage
              .outbox
              .computeIfAbsent(message.queue(), q -> new java.util.TreeMap<>())
              .put(id, new Item(id, message, commit.nowMillis()));
        }
        return r;
      }
    }
  }

  static final class EnqueuesOnStaleCommitContract extends MutantContract {
    EnqueuesOnStaleCommitContract() {
      super(EnqueuesOnStaleCommit::new);
    }
  }

  // ---- pending() lists entries by claiming them (not read-only), and drops the last error ----

  static final class PendingClaims extends ReferenceStore {
    PendingClaims(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public java.util.List<PendingEntry> pending(String queue, int limit) {
      synchronized (storage) {
        java.util.List<PendingEntry> out = new java.util.ArrayList<>();
        for (OutboxRecord r : claim(queue, limit, 0, 1)) {
          out.add(
              new PendingEntry(
                  r.id(),
                  queue,
                  r.key(),
                  r.payload(),
                  r.attempts(),
                  r.enqueuedAtMillis(),
                  0,
                  null));
        }
        return out;
      }
    }
  }

  static final class PendingClaimsContract extends MutantContract {
    PendingClaimsContract() {
      super(PendingClaims::new);
    }
  }

  // ---- claims ignore ordering keys (an outbox that orders only within one deliverer) ----

  static final class ClaimIgnoresOrderingKeys extends ReferenceStore {
    ClaimIgnoresOrderingKeys(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    boolean keepsOrder() {
      return false;
    }
  }

  static final class ClaimIgnoresOrderingKeysContract extends MutantContract {
    ClaimIgnoresOrderingKeysContract() {
      super(ClaimIgnoresOrderingKeys::new);
    }
  }

  // ---- acknowledge / reschedule / dead letter by id alone: a stale claimer's late answer wins
  // ----

  static final class SettlesWithoutFence extends ReferenceStore {
    SettlesWithoutFence(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    boolean fences() {
      return false;
    }
  }

  static final class SettlesWithoutFenceContract extends MutantContract {
    SettlesWithoutFenceContract() {
      super(SettlesWithoutFence::new);
    }
  }

  // ---- claim(0) and pending(0) answer an empty list instead of refusing ----

  static final class LenientLimits extends ReferenceStore {
    LenientLimits(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public java.util.List<OutboxRecord> claim(
        String queue, int max, long nowMillis, long claimMillis) {
      return max <= 0 ? java.util.List.of() : super.claim(queue, max, nowMillis, claimMillis);
    }

    @Override
    public java.util.List<PendingEntry> pending(String queue, int limit) {
      return limit <= 0 ? java.util.List.of() : super.pending(queue, limit);
    }
  }

  static final class LenientLimitsContract extends MutantContract {
    LenientLimitsContract() {
      super(LenientLimits::new);
    }
  }

  // ---- a requeued dead letter keeps its attempts and error (so it is dead again at once) ----

  static final class RequeueKeepsAttempts extends ReferenceStore {
    RequeueKeepsAttempts(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    Item requeued(Item fresh, dev.idem.spi.DeadLetter from) {
      fresh.attempts = from.attempts();
      fresh.lastError = from.reason();
      return fresh;
    }
  }

  static final class RequeueKeepsAttemptsContract extends MutantContract {
    RequeueKeepsAttemptsContract() {
      super(RequeueKeepsAttempts::new);
    }
  }

  // ---- a requeued dead letter loses its ordering key (the JDBC and RocksDB stores did) ----

  static final class RequeueDropsOrderingKey extends ReferenceStore {
    RequeueDropsOrderingKey(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    Item requeued(Item fresh, dev.idem.spi.DeadLetter from) {
      return new Item(
          fresh.id,
          new dev.idem.spi.OutboxMessage(
              fresh.message.queue(), fresh.message.key(), fresh.message.payload()),
          fresh.enqueuedAt);
    }
  }

  static final class RequeueDropsOrderingKeyContract extends MutantContract {
    RequeueDropsOrderingKeyContract() {
      super(RequeueDropsOrderingKey::new);
    }
  }

  // ---- a bounded store that evicts in insertion order (a hit is not a use) ----

  static final class FifoEviction extends ReferenceStore {
    FifoEviction(Storage storage, int maxKeys) {
      super(storage, maxKeys, ReferenceStore.all());
    }

    @Override
    public ReserveResult reserve(ReserveRequest r) {
      synchronized (storage) {
        StoredEntry current = scope(r.scope()).get(r.key());
        Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
        if (t.changed() && current == null) {
          put(r.scope(), r.key(), t.next());
        } else if (t.changed()) {
          scope(r.scope()).replace(r.key(), t.next()); // keeps the insertion position
        }
        return t.answer();
      }
    }
  }

  static final class FifoEvictionContract extends MutantContract {
    FifoEvictionContract() {
      super(s -> new FifoEviction(s, Integer.MAX_VALUE));
    }

    @Override
    protected DedupStore newBoundedStore(TimeSource time, int maxKeysPerScope) {
      return new FifoEviction(new ReferenceStore.Storage(), maxKeysPerScope);
    }
  }

  // ---- a "durable" store that keeps only committed keys across a restart ----

  static final class ForgetsReservationsOnReopenContract extends MutantContract {
    ForgetsReservationsOnReopenContract() {
      super(s -> new ReferenceStore(s, Integer.MAX_VALUE, ReferenceStore.all()));
    }

    @Override
    protected DedupStore reopen(DedupStore store, TimeSource time) {
      ReferenceStore old = (ReferenceStore) store;
      old.close();
      synchronized (old.storage) {
        for (var map : old.storage.keys.values()) {
          map.values().removeIf(e -> e.state() == State.IN_FLIGHT);
        }
      }
      return new ReferenceStore(old.storage, Integer.MAX_VALUE, ReferenceStore.all());
    }
  }

  // ---- a sweeper that also removes entries about to expire ----

  static final class EagerSweeper extends ReferenceStore {
    EagerSweeper(Storage storage) {
      super(storage, Integer.MAX_VALUE, ReferenceStore.all());
    }

    @Override
    public long sweepExpired(long nowMillis) {
      synchronized (storage) {
        long swept = 0;
        for (var map : storage.keys.values()) {
          for (Iterator<StoredEntry> it = map.values().iterator(); it.hasNext(); ) {
            if (it.next().isDeadAt(nowMillis + 60_000)) {
              it.remove();
              swept++;
            }
          }
        }
        return swept;
      }
    }
  }

  static final class EagerSweeperContract extends MutantContract {
    EagerSweeperContract() {
      super(EagerSweeper::new);
    }
  }
}
