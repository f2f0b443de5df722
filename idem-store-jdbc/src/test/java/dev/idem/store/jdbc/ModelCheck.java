package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Feeds a store and the reference {@link DedupStateMachine} (over a map) the same seeded random
 * operations and asserts that every answer is the same: reserve, the batch forms, commit, release,
 * inspect, forget, clear and sweep, with sliding, fixed and no TTLs, fingerprints, results and a
 * clock that jumps past leases and TTLs. A failure names the seed and the step.
 */
final class ModelCheck {
  private static final Scope[] SCOPES = {Scope.of("model-a"), Scope.of("model-b")};
  private static final Ttl[] TTLS = {
    new Ttl(4_000, Expiry.SLIDING), new Ttl(4_000, Expiry.FIXED), Ttl.NONE
  };
  private static final Fingerprint[] FINGERPRINTS = {
    null,
    Fingerprint.sha256("a".getBytes(StandardCharsets.UTF_8)),
    Fingerprint.sha256("b".getBytes(StandardCharsets.UTF_8))
  };

  private final DedupStore store;
  private final long seed;
  private final Random random;
  private final DedupKey[] keys = new DedupKey[4];
  private final Map<String, StoredEntry> model = new HashMap<>();
  private final List<Long> tokens = new ArrayList<>();
  private long now = 1_767_225_600_000L;
  private long nextToken = 1;
  private int step;

  ModelCheck(DedupStore store, long seed) {
    this.store = store;
    this.seed = seed;
    this.random = new Random(seed);
    for (int i = 0; i < keys.length; i++) {
      keys[i] = TestDb.key("model-" + seed + "-" + i);
    }
  }

  void run(int steps) {
    for (step = 0; step < steps; step++) {
      int op = random.nextInt(100);
      if (op < 30) {
        ReserveRequest r = reserveRequest();
        expect("reserve", store.reserve(r), applyReserve(r));
      } else if (op < 38) {
        List<ReserveRequest> batch = new ArrayList<>();
        List<Object> want = new ArrayList<>();
        for (int i = 2 + random.nextInt(4); i > 0; i--) {
          ReserveRequest r = reserveRequest();
          batch.add(r);
          want.add(normal(applyReserve(r)));
        }
        assertThat(normalAll(store.reserveAll(batch))).as(where("reserveAll")).isEqualTo(want);
      } else if (op < 52) {
        CommitRequest c = commitRequest();
        expect("commit", store.commit(c), applyCommit(c));
      } else if (op < 57) {
        List<CommitRequest> batch = new ArrayList<>();
        List<Object> want = new ArrayList<>();
        for (int i = 2 + random.nextInt(3); i > 0; i--) {
          CommitRequest c = commitRequest();
          batch.add(c);
          want.add(applyCommit(c));
        }
        assertThat(new ArrayList<Object>(store.commitAll(batch)))
            .as(where("commitAll"))
            .isEqualTo(want);
      } else if (op < 65) {
        ReleaseRequest r = releaseRequest();
        expect("release", store.release(r), applyRelease(r));
      } else if (op < 69) {
        List<ReleaseRequest> batch = new ArrayList<>();
        List<Object> want = new ArrayList<>();
        for (int i = 2 + random.nextInt(3); i > 0; i--) {
          ReleaseRequest r = releaseRequest();
          batch.add(r);
          want.add(applyRelease(r));
        }
        assertThat(new ArrayList<Object>(store.releaseAll(batch)))
            .as(where("releaseAll"))
            .isEqualTo(want);
      } else if (op < 77) {
        Scope s = scope();
        DedupKey k = key();
        expect(
            "inspect",
            store.inspect(s, k, now),
            DedupStateMachine.inspect(model.get(id(s, k)), now));
      } else if (op < 80) {
        Scope s = scope();
        DedupKey k = key();
        expect("forget", store.forget(s, k), model.remove(id(s, k)) != null);
      } else if (op < 81) {
        Scope s = scope();
        long want = model.keySet().stream().filter(id -> id.startsWith(s + "|")).count();
        model.keySet().removeIf(id -> id.startsWith(s + "|"));
        expect("clear", store.clear(s), want);
      } else if (op < 85) {
        long want = model.values().stream().filter(e -> e.isDeadAt(now)).count();
        model.values().removeIf(e -> e.isDeadAt(now));
        expect("sweepExpired", store.sweepExpired(now), want);
      } else {
        now += random.nextInt(2_500);
      }
    }
  }

  private ReserveRequest reserveRequest() {
    long token = nextToken++;
    tokens.add(token);
    return new ReserveRequest(
        scope(),
        key(),
        FINGERPRINTS[random.nextInt(FINGERPRINTS.length)],
        token,
        now,
        1_000 + random.nextInt(2_000),
        TTLS[random.nextInt(TTLS.length)]);
  }

  private CommitRequest commitRequest() {
    byte[] result = random.nextBoolean() ? null : ("r" + step).getBytes(StandardCharsets.UTF_8);
    return new CommitRequest(
        scope(), key(), token(), now, TTLS[random.nextInt(TTLS.length)], result);
  }

  private ReleaseRequest releaseRequest() {
    return new ReleaseRequest(scope(), key(), token(), now);
  }

  /** A token some reservation used (most of the time a recent one), or one nobody used. */
  private long token() {
    if (tokens.isEmpty() || random.nextInt(10) == 0) {
      return 1_000_000 + random.nextInt(1000);
    }
    int recent = Math.min(tokens.size(), 6);
    return tokens.get(tokens.size() - 1 - random.nextInt(recent));
  }

  private Scope scope() {
    return SCOPES[random.nextInt(SCOPES.length)];
  }

  private DedupKey key() {
    return keys[random.nextInt(keys.length)];
  }

  private static String id(Scope s, DedupKey k) {
    return s + "|" + k.toHex();
  }

  private ReserveResult applyReserve(ReserveRequest r) {
    var t = DedupStateMachine.reserve(model.get(id(r.scope(), r.key())), r);
    put(id(r.scope(), r.key()), t.next());
    return t.answer();
  }

  private SettleResult applyCommit(CommitRequest c) {
    var t = DedupStateMachine.commit(model.get(id(c.scope(), c.key())), c);
    put(id(c.scope(), c.key()), t.next());
    return t.answer();
  }

  private SettleResult applyRelease(ReleaseRequest r) {
    var t = DedupStateMachine.release(model.get(id(r.scope(), r.key())), r);
    put(id(r.scope(), r.key()), t.next());
    return t.answer();
  }

  private void put(String id, StoredEntry next) {
    if (next == null) {
      model.remove(id);
    } else {
      model.put(id, next);
    }
  }

  private void expect(String op, Object actual, Object expected) {
    assertThat(normal(actual)).as(where(op)).isEqualTo(normal(expected));
  }

  private String where(String op) {
    return "seed " + seed + ", step " + step + ": " + op + " on " + store.describe();
  }

  private static List<Object> normalAll(List<?> values) {
    List<Object> out = new ArrayList<>();
    values.forEach(v -> out.add(normal(v)));
    return out;
  }

  /** Records holding byte arrays compare arrays by identity; compare their contents instead. */
  private static Object normal(Object v) {
    if (v instanceof ReserveResult.Duplicate d) {
      return "Duplicate["
          + d.committedAtMillis()
          + ", "
          + d.expiresAtMillis()
          + ", "
          + Arrays.toString(d.result())
          + "]";
    }
    if (v instanceof KeyState.Committed c) {
      return "Committed["
          + c.committedAtMillis()
          + ", "
          + c.expiresAtMillis()
          + ", "
          + c.fingerprint()
          + ", "
          + Arrays.toString(c.result())
          + "]";
    }
    return v;
  }
}
