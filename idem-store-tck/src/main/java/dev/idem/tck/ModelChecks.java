package dev.idem.tck;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.Ttl;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A seeded randomized model test: random sequences of every operation (extend included), single and
 * batched, with random clock steps (many of them onto or next to a lease end or a key's expiry) on
 * a small key space in two scopes, each answer compared with {@link DedupStateMachine} over a map.
 * On failure the seed and the last operations are printed; {@code -Didem.tck.seed=<seed>} replays
 * the run.
 *
 * <p>One freedom is allowed, because a store may remove a dead entry at any moment (a background
 * sweeper, native expiry): where the model still holds a dead entry, {@code forget} may answer
 * either way, {@code clear} may count it or not, and a reserve may report it replaced or {@link
 * ReserveResult.Replaced#NOTHING}.
 */
abstract class ModelChecks extends ContractChecks {
  /** The system property that fixes the seed. */
  static final String SEED_PROPERTY = "idem.tck.seed";

  private static final int OPERATIONS = 2_000;

  ModelChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void randomOperationsAnswerExactlyAsTheReferenceStateMachine() {
    String fixed = System.getProperty(SEED_PROPERTY);
    long seed = fixed == null ? new SplittableRandom().nextLong() : Long.parseLong(fixed.trim());
    new ModelRun(seed).run(OPERATIONS);
  }

  private final class ModelRun {
    private static final int KEYS = 5;
    private static final int LOG_LINES = 120;
    private static final int MIN_SEEN = 3;
    private static final List<String> OUTCOMES =
        List.of(
            "reserve Acquired NOTHING",
            "reserve Acquired EXPIRED_LEASE",
            "reserve Acquired EXPIRED_KEY",
            "reserve Duplicate",
            "reserve Duplicate refreshed",
            "reserve InFlight",
            "reserve Conflict",
            "commit APPLIED changed",
            "commit APPLIED repeated",
            "commit STALE",
            "release APPLIED",
            "release STALE",
            "extend APPLIED changed",
            "extend APPLIED unchanged",
            "extend STALE",
            "inspect Absent",
            "inspect InFlight",
            "inspect Committed",
            "forget true",
            "clear");

    private final long seed;
    private final SplittableRandom random;
    private final DedupStore store = store();
    private final boolean sweeps = !fx.capabilities().nativeExpiry();
    private final List<Scope> scopes = List.of(scope(), fx.newScope());
    private final List<DedupKey> keys = new ArrayList<>();
    private final List<Ttl> ttls =
        List.of(
            new Ttl(2 * 60_000, Expiry.SLIDING),
            new Ttl(3 * 60_000, Expiry.FIXED),
            Ttl.NONE,
            new Ttl(60_000, Expiry.SLIDING),
            new Ttl(5 * 60_000, Expiry.SLIDING));
    private final Map<Slot, StoredEntry> model = new HashMap<>();
    private final Map<Slot, List<Long>> issued = new HashMap<>();
    private final Deque<String> log = new ArrayDeque<>();
    private final long start = now();
    private final Map<String, Integer> explored = new java.util.TreeMap<>();
    private int step;

    /** One (scope, key) pair of the key space. */
    private record Slot(int scope, int key) {}

    ModelRun(long seed) {
      this.seed = seed;
      this.random = new SplittableRandom(seed);
      for (int i = 0; i < KEYS; i++) {
        keys.add(DedupKey.ofWords(random.nextLong(), random.nextLong(), i, seed));
      }
    }

    void run(int operations) {
      for (step = 1; step <= operations; step++) {
        try {
          one();
        } catch (AssertionError | RuntimeException e) {
          throw new AssertionError(failure(e.getMessage()), e);
        }
      }
      // a run that never reached some outcome would prove nothing about it
      List<String> missing = new ArrayList<>();
      for (String outcome : OUTCOMES) {
        if (explored.getOrDefault(outcome, 0) < MIN_SEEN) {
          missing.add(outcome);
        }
      }
      if (!missing.isEmpty()) {
        throw new AssertionError(
            "the randomized run with seed "
                + seed
                + " reached "
                + missing
                + " fewer than "
                + MIN_SEEN
                + " times; outcomes seen: "
                + explored);
      }
    }

    private void explored(String outcome) {
      explored.merge(outcome, 1, Integer::sum);
    }

    private void one() {
      int dice = random.nextInt(100);
      if (dice < 12) {
        advanceClock();
      } else if (dice < 30) {
        reserve();
      } else if (dice < 42) {
        process();
      } else if (dice < 54) {
        commit();
      } else if (dice < 60) {
        release();
      } else if (dice < 66) {
        inspect();
      } else if (dice < 70) {
        extend();
      } else if (dice < 74) {
        forget();
      } else if (dice < 76) {
        clear();
      } else if (dice < 84) {
        reserveAll();
      } else if (dice < 90) {
        commitAll();
      } else if (dice < 94) {
        releaseAll();
      } else if (sweeps) {
        sweep();
      } else {
        inspect();
      }
    }

    // ---- operations ----

    private void advanceClock() {
      long by;
      int kind = random.nextInt(6);
      List<Long> deadlines = new ArrayList<>();
      for (StoredEntry e : model.values()) {
        if (e.deadlineMillis() != Long.MAX_VALUE && e.deadlineMillis() > now()) {
          deadlines.add(e.deadlineMillis());
        }
      }
      if (kind <= 2 && !deadlines.isEmpty()) {
        // onto, just before or just after a lease end or an expiry
        long deadline = deadlines.get(random.nextInt(deadlines.size()));
        by = deadline - now() + (kind - 1);
        by = Math.max(0, by);
      } else if (kind == 3) {
        by = random.nextLong(1_000);
      } else if (kind == 4) {
        by = random.nextLong(1_000, 60_000);
      } else {
        by = random.nextLong(60_000, 3 * 60_000);
      }
      advance(by);
      note("advance " + by + " ms");
    }

    private void reserve() {
      ReserveRequest r = reserveRequest(randomSlot());
      note("reserve " + describe(r));
      check(r, store.reserve(r));
    }

    /**
     * What a worker does: reserve, and if acquired, sometimes work a while and renew its lease,
     * then commit (or, on failure, release).
     */
    private void process() {
      ReserveRequest r = reserveRequest(randomSlot());
      note("process: reserve " + describe(r));
      ReserveResult answer = store.reserve(r);
      check(r, answer);
      if (!(answer instanceof ReserveResult.Acquired)) {
        return;
      }
      if (random.nextInt(3) == 0) {
        long worked = random.nextLong(1, 45_000);
        advance(worked);
        ExtendRequest e =
            new ExtendRequest(
                r.scope(), r.key(), r.token(), now(), 30_000L * (1 + random.nextInt(3)));
        note("process: after " + worked + " ms, extend " + describe(e));
        check(e, store.extend(e));
      }
      if (random.nextInt(5) > 0) {
        CommitRequest c =
            new CommitRequest(r.scope(), r.key(), r.token(), now(), r.ttl(), randomResult());
        note("process: commit " + describe(c));
        check(c, store.commit(c));
      } else {
        ReleaseRequest rel = new ReleaseRequest(r.scope(), r.key(), r.token(), now());
        note("process: release " + describe(rel));
        check(rel, store.release(rel));
      }
    }

    private void reserveAll() {
      List<ReserveRequest> requests = new ArrayList<>();
      int n = 1 + random.nextInt(5);
      for (int i = 0; i < n; i++) {
        requests.add(reserveRequest(randomSlot()));
      }
      note("reserveAll " + requests.stream().map(this::describe).toList());
      List<ReserveResult> answers = store.reserveAll(requests);
      expect(answers.size() == n, "reserveAll answered " + answers.size() + " for " + n);
      for (int i = 0; i < n; i++) {
        check(requests.get(i), answers.get(i));
      }
    }

    private void commit() {
      CommitRequest c = commitRequest(randomSlot());
      note("commit " + describe(c));
      check(c, store.commit(c));
    }

    private void commitAll() {
      List<CommitRequest> requests = new ArrayList<>();
      int n = 1 + random.nextInt(4);
      for (int i = 0; i < n; i++) {
        requests.add(commitRequest(randomSlot()));
      }
      note("commitAll " + requests.stream().map(this::describe).toList());
      List<SettleResult> answers = store.commitAll(requests);
      expect(answers.size() == n, "commitAll answered " + answers.size() + " for " + n);
      for (int i = 0; i < n; i++) {
        check(requests.get(i), answers.get(i));
      }
    }

    private void release() {
      ReleaseRequest r = releaseRequest(randomSlot());
      note("release " + describe(r));
      check(r, store.release(r));
    }

    private void releaseAll() {
      List<ReleaseRequest> requests = new ArrayList<>();
      int n = 1 + random.nextInt(4);
      for (int i = 0; i < n; i++) {
        requests.add(releaseRequest(randomSlot()));
      }
      note("releaseAll " + requests.stream().map(this::describe).toList());
      List<SettleResult> answers = store.releaseAll(requests);
      expect(answers.size() == n, "releaseAll answered " + answers.size() + " for " + n);
      for (int i = 0; i < n; i++) {
        check(requests.get(i), answers.get(i));
      }
    }

    private void extend() {
      ExtendRequest e = extendRequest(randomSlot());
      note("extend " + describe(e));
      check(e, store.extend(e));
    }

    private void inspect() {
      Slot s = randomSlot();
      var state = DedupStateMachine.inspect(model.get(s), now());
      explored("inspect " + state.getClass().getSimpleName());
      String expected = Describe.state(state);
      String actual =
          Describe.state(store.inspect(scopes.get(s.scope()), keys.get(s.key()), now()));
      note("inspect " + s + " -> " + actual);
      expect(
          actual.equals(expected), "inspect " + s + ": expected " + expected + ", got " + actual);
    }

    private void forget() {
      Slot s = randomSlot();
      StoredEntry entry = model.remove(s);
      boolean actual = store.forget(scopes.get(s.scope()), keys.get(s.key()));
      note("forget " + s + " -> " + actual);
      if (entry != null && !entry.isDeadAt(now())) {
        explored("forget true");
      }
      if (entry == null) {
        expect(!actual, "forget of " + s + " that has no entry answered true");
      } else if (!entry.isDeadAt(now())) {
        expect(actual, "forget of " + s + " holding " + entry + " answered false");
      }
    }

    private void clear() {
      int scope = random.nextInt(scopes.size());
      long live = 0;
      long dead = 0;
      for (var it = model.entrySet().iterator(); it.hasNext(); ) {
        var e = it.next();
        if (e.getKey().scope() == scope) {
          if (e.getValue().isDeadAt(now())) {
            dead++;
          } else {
            live++;
          }
          it.remove();
        }
      }
      explored("clear");
      long actual = store.clear(scopes.get(scope));
      note("clear scope " + scope + " -> " + actual);
      expect(
          actual >= live && actual <= live + dead,
          "clear of scope "
              + scope
              + " holding "
              + live
              + " live and "
              + dead
              + " dead entries answered "
              + actual);
    }

    private void sweep() {
      long swept = store.sweepExpired(now());
      note("sweepExpired -> " + swept);
      expect(swept >= 0, "sweepExpired answered " + swept);
      // whatever ran out strictly before now is gone; an entry dead just now may stay a moment
      model.values().removeIf(e -> e.deadlineMillis() < now());
    }

    // ---- requests ----

    private ReserveRequest reserveRequest(Slot s) {
      long token = newRandomToken();
      issued.computeIfAbsent(s, k -> new ArrayList<>()).add(token);
      long lease = random.nextBoolean() ? 60_000 : 90_000;
      return new ReserveRequest(
          scopes.get(s.scope()),
          keys.get(s.key()),
          randomFingerprint(),
          token,
          now(),
          lease,
          ttls.get(s.key()));
    }

    private CommitRequest commitRequest(Slot s) {
      return new CommitRequest(
          scopes.get(s.scope()),
          keys.get(s.key()),
          randomToken(s),
          now(),
          ttls.get(s.key()),
          randomResult());
    }

    private ReleaseRequest releaseRequest(Slot s) {
      return new ReleaseRequest(scopes.get(s.scope()), keys.get(s.key()), randomToken(s), now());
    }

    private ExtendRequest extendRequest(Slot s) {
      long lease = 30_000L * (1 + random.nextInt(3));
      return new ExtendRequest(
          scopes.get(s.scope()), keys.get(s.key()), randomToken(s), now(), lease);
    }

    /** Mostly the token that holds the slot, sometimes an older one or one never issued. */
    private long randomToken(Slot s) {
      StoredEntry entry = model.get(s);
      List<Long> old = issued.getOrDefault(s, List.of());
      int dice = random.nextInt(100);
      if (entry != null && dice < 70) {
        return entry.token();
      }
      if (!old.isEmpty() && dice < 88) {
        return old.get(random.nextInt(old.size()));
      }
      return newRandomToken();
    }

    private long newRandomToken() {
      long t;
      do {
        t = random.nextLong();
      } while (t == 0);
      return t;
    }

    private @Nullable Fingerprint randomFingerprint() {
      return switch (random.nextInt(3)) {
        case 0 -> null;
        case 1 -> FP_A;
        default -> FP_B;
      };
    }

    private byte @Nullable [] randomResult() {
      return switch (random.nextInt(4)) {
        case 0 -> null;
        case 1 -> new byte[0];
        case 2 -> utf8("ok");
        default -> {
          byte[] b = new byte[1 + random.nextInt(40)];
          random.nextBytes(b);
          yield b;
        }
      };
    }

    private Slot randomSlot() {
      return new Slot(random.nextInt(scopes.size()), random.nextInt(KEYS));
    }

    // ---- comparison with the model ----

    private void check(ReserveRequest r, ReserveResult actual) {
      Slot s = slotOf(r.scope(), r.key());
      StoredEntry current = model.get(s);
      Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
      apply(s, t);
      explored(
          "reserve "
              + t.answer().getClass().getSimpleName()
              + (t.answer() instanceof ReserveResult.Acquired a ? " " + a.replaced() : "")
              + (t.answer() instanceof ReserveResult.Duplicate && t.changed() ? " refreshed" : ""));
      if (t.answer() instanceof ReserveResult.Duplicate && t.changed()) {
        explored("reserve Duplicate");
      }
      String expected = Describe.answer(t.answer());
      String got = Describe.answer(actual);
      note("  " + s + " -> " + got);
      if (got.equals(expected)) {
        return;
      }
      boolean deadEntry = current != null && current.isDeadAt(r.nowMillis());
      if (deadEntry
          && t.answer() instanceof ReserveResult.Acquired e
          && actual instanceof ReserveResult.Acquired a
          && a.token() == e.token()
          && a.leaseUntilMillis() == e.leaseUntilMillis()
          && a.replaced() == ReserveResult.Replaced.NOTHING) {
        return; // the dead entry was removed before this reserve
      }
      throw new AssertionError("reserve of " + s + ": expected " + expected + ", got " + got);
    }

    private void check(CommitRequest c, SettleResult actual) {
      Slot s = slotOf(c.scope(), c.key());
      Transition<SettleResult> t = DedupStateMachine.commit(model.get(s), c);
      apply(s, t);
      explored(
          "commit "
              + t.answer()
              + (t.answer() == SettleResult.APPLIED
                  ? (t.changed() ? " changed" : " repeated")
                  : ""));
      note("  " + s + " -> " + actual);
      expect(
          actual == t.answer(),
          "commit of "
              + s
              + " with token "
              + c.token()
              + ": expected "
              + t.answer()
              + ", got "
              + actual);
    }

    private void check(ReleaseRequest r, SettleResult actual) {
      Slot s = slotOf(r.scope(), r.key());
      Transition<SettleResult> t = DedupStateMachine.release(model.get(s), r);
      apply(s, t);
      explored("release " + t.answer());
      note("  " + s + " -> " + actual);
      expect(
          actual == t.answer(),
          "release of "
              + s
              + " with token "
              + r.token()
              + ": expected "
              + t.answer()
              + ", got "
              + actual);
    }

    private void check(ExtendRequest e, SettleResult actual) {
      Slot s = slotOf(e.scope(), e.key());
      Transition<SettleResult> t = DedupStateMachine.extend(model.get(s), e);
      apply(s, t);
      explored(
          "extend "
              + t.answer()
              + (t.answer() == SettleResult.APPLIED
                  ? (t.changed() ? " changed" : " unchanged")
                  : ""));
      note("  " + s + " -> " + actual);
      expect(
          actual == t.answer(),
          "extend of "
              + s
              + " with token "
              + e.token()
              + ": expected "
              + t.answer()
              + ", got "
              + actual);
    }

    private void apply(Slot s, Transition<?> t) {
      if (!t.changed()) {
        return;
      }
      StoredEntry next = t.next();
      if (next == null) {
        model.remove(s);
      } else {
        model.put(s, next);
      }
    }

    private Slot slotOf(Scope scope, DedupKey key) {
      return new Slot(scopes.indexOf(scope), keys.indexOf(key));
    }

    // ---- the log ----

    private void expect(boolean condition, String message) {
      if (!condition) {
        throw new AssertionError(message);
      }
    }

    private void note(String line) {
      if (log.size() == LOG_LINES) {
        log.removeFirst();
      }
      log.addLast("#" + step + " t+" + (now() - start) + " " + line);
    }

    private String describe(ReserveRequest r) {
      return slotOf(r.scope(), r.key())
          + " token="
          + r.token()
          + " fp="
          + Describe.fingerprint(r.fingerprint())
          + " lease="
          + r.leaseMillis()
          + " ttl="
          + r.ttl().millis()
          + "/"
          + r.ttl().expiry();
    }

    private String describe(CommitRequest c) {
      return slotOf(c.scope(), c.key())
          + " token="
          + c.token()
          + " ttl="
          + c.ttl().millis()
          + "/"
          + c.ttl().expiry()
          + " result="
          + Describe.bytes(c.result());
    }

    private String describe(ReleaseRequest r) {
      return slotOf(r.scope(), r.key()) + " token=" + r.token();
    }

    private String describe(ExtendRequest e) {
      return slotOf(e.scope(), e.key()) + " token=" + e.token() + " lease=" + e.leaseMillis();
    }

    private String describe(StoredEntry e) {
      return e.state()
          + " token="
          + e.token()
          + " since=t+"
          + (e.sinceMillis() - start)
          + " deadline="
          + (e.deadlineMillis() == Long.MAX_VALUE ? "never" : "t+" + (e.deadlineMillis() - start))
          + " fp="
          + Describe.fingerprint(e.fingerprint())
          + " result="
          + Describe.bytes(e.result());
    }

    private String failure(@Nullable String message) {
      StringBuilder b = new StringBuilder();
      b.append("randomized model check failed at operation ")
          .append(step)
          .append(" with seed ")
          .append(seed)
          .append(" (replay with -D")
          .append(SEED_PROPERTY)
          .append('=')
          .append(seed)
          .append("): ")
          .append(message)
          .append("\nstore: ")
          .append(store.describe())
          .append("\nscopes: ")
          .append(scopes)
          .append("; keys: ")
          .append(keys)
          .append("\nmodel at the failure:");
      model.forEach((slot, e) -> b.append("\n  ").append(slot).append(' ').append(describe(e)));
      b.append("\nlast ").append(log.size()).append(" operations (times from the start):");
      for (String line : log) {
        b.append("\n  ").append(line);
      }
      return b.toString();
    }
  }
}
