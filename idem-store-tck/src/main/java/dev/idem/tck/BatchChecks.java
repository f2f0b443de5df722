package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The batch forms: each element decided atomically and exactly as the single form would decide it
 * in list order, results in request order, a key twice in one batch acquired at most once.
 */
abstract class BatchChecks extends ContractChecks {

  BatchChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void emptyBatchesAnswerEmptyLists() {
    assertThat(store().reserveAll(List.of())).isEmpty();
    assertThat(store().commitAll(List.of())).isEmpty();
    assertThat(store().releaseAll(List.of())).isEmpty();
  }

  @Test
  void reserveAllAnswersInRequestOrder() {
    // given a committed key, an in-flight key and a new key
    DedupKey committed = newKey();
    DedupKey held = newKey();
    DedupKey fresh = newKey();
    long t0 = now();
    commitNew(committed, null, FIXED, utf8("r"));
    acquire(held);
    long token = newToken();

    // when
    List<ReserveResult> answers =
        store()
            .reserveAll(
                List.of(
                    reserveRequest(fresh, token),
                    reserveRequest(committed, newToken()),
                    reserveRequest(held, newToken())));

    // then
    assertThat(answers.stream().map(Describe::answer))
        .containsExactly(
            Describe.answer(acquired(token, t0 + LEASE)),
            Describe.answer(duplicate(t0, t0 + WINDOW, utf8("r"))),
            Describe.answer(inFlight(t0 + LEASE)));
  }

  @Test
  void aKeyTwiceInOneReserveAllIsAcquiredAtMostOnce() {
    // given
    DedupKey twice = newKey();
    DedupKey other = newKey();
    long first = newToken();
    long second = newToken();
    long otherToken = newToken();
    long t0 = now();

    // when
    List<ReserveResult> answers =
        store()
            .reserveAll(
                List.of(
                    reserveRequest(twice, first),
                    reserveRequest(other, otherToken),
                    reserveRequest(twice, second)));

    // then the second request for the key sees the first one's reservation
    assertThat(answers.stream().map(Describe::answer))
        .containsExactly(
            Describe.answer(acquired(first, t0 + LEASE)),
            Describe.answer(acquired(otherToken, t0 + LEASE)),
            Describe.answer(inFlight(t0 + LEASE)));
    assertState(inspect(twice), inFlightState(t0, t0 + LEASE, null));
    assertSettle(commit(twice, second), SettleResult.STALE, "commit by the second request");
    assertSettle(commit(twice, first), SettleResult.APPLIED, "commit by the first request");
  }

  @Test
  void aKeyTwiceInOneCommitAllOrReleaseAllIsSettledOnce() {
    DedupKey committed = newKey();
    DedupKey released = newKey();
    long c = acquire(committed);
    long r = acquire(released);

    List<SettleResult> commits =
        store()
            .commitAll(
                List.of(
                    commitRequest(committed, c, SLIDING, utf8("1")),
                    commitRequest(committed, c, SLIDING, utf8("2"))));
    List<SettleResult> releases =
        store().releaseAll(List.of(releaseRequest(released, r), releaseRequest(released, r)));

    assertThat(commits)
        .as("a commit repeated in one batch")
        .containsExactly(SettleResult.APPLIED, SettleResult.APPLIED);
    assertThat(releases)
        .as("a release repeated in one batch")
        .containsExactly(SettleResult.APPLIED, SettleResult.STALE);
    assertState(inspect(committed), committedState(now(), now() + WINDOW, null, utf8("1")));
  }

  @Test
  void batchFormsAgreeWithTheSingleFormsOnEveryKindOfKey() {
    // given the same keys in the same states in two scopes
    Scope batched = scope();
    Scope single = fx.newScope();
    Keys k = new Keys();
    prepare(List.of(batched, single), k);

    // when one scope is driven with the batch forms and the other with the single forms
    List<String> reserveBatch =
        store().reserveAll(k.reserves(batched)).stream().map(Describe::answer).toList();
    List<String> reserveSingle = new ArrayList<>();
    for (ReserveRequest r : k.reserves(single)) {
      reserveSingle.add(Describe.answer(store().reserve(r)));
    }
    advance(1_000);
    List<SettleResult> commitBatch = store().commitAll(k.commits(batched));
    List<SettleResult> commitSingle = new ArrayList<>();
    for (CommitRequest c : k.commits(single)) {
      commitSingle.add(store().commit(c));
    }
    List<SettleResult> releaseBatch = store().releaseAll(k.releases(batched));
    List<SettleResult> releaseSingle = new ArrayList<>();
    for (ReleaseRequest r : k.releases(single)) {
      releaseSingle.add(store().release(r));
    }

    // then every answer and every resulting state is the same
    assertThat(reserveBatch).as("reserveAll vs reserve").containsExactlyElementsOf(reserveSingle);
    assertThat(commitBatch).as("commitAll vs commit").containsExactlyElementsOf(commitSingle);
    assertThat(releaseBatch).as("releaseAll vs release").containsExactlyElementsOf(releaseSingle);
    for (DedupKey key : k.all()) {
      assertThat(Describe.state(store().inspect(batched, key, now())))
          .as("state of %s after the batches", key)
          .isEqualTo(Describe.state(store().inspect(single, key, now())));
    }
    // and the batch answers are the ones the lifecycle defines (not merely equal to each other)
    assertThat(reserveBatch)
        .containsExactly(
            Describe.answer(acquired(k.tokens[0], k.t1 + LEASE)),
            Describe.answer(inFlight(k.t1 + LEASE)),
            Describe.answer(duplicate(k.t0, k.t0 + WINDOW, utf8("two"))),
            Describe.answer(conflict(k.t0)),
            Describe.answer(
                acquired(k.tokens[4], k.t1 + LEASE, ReserveResult.Replaced.EXPIRED_LEASE)),
            Describe.answer(
                acquired(k.tokens[5], k.t1 + LEASE, ReserveResult.Replaced.EXPIRED_KEY)),
            Describe.answer(inFlight(k.t1 + LEASE)));
    assertThat(commitBatch)
        .containsExactly(
            SettleResult.APPLIED,
            SettleResult.APPLIED,
            SettleResult.STALE,
            SettleResult.APPLIED,
            SettleResult.STALE,
            SettleResult.STALE);
    assertThat(releaseBatch)
        .containsExactly(
            SettleResult.STALE, SettleResult.APPLIED, SettleResult.STALE, SettleResult.STALE);
  }

  @Test
  void aLargeBatchIsDecidedWhole() {
    // given
    int n = 250;
    List<DedupKey> keys = new ArrayList<>();
    List<ReserveRequest> reserves = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      DedupKey key = newKey();
      keys.add(key);
      reserves.add(reserveRequest(key, newToken()));
    }

    // when
    List<ReserveResult> acquiredAll = store().reserveAll(reserves);
    List<CommitRequest> commits = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      commits.add(
          commitRequest(keys.get(i), reserves.get(i).token(), SLIDING, new byte[] {(byte) i}));
    }
    List<SettleResult> committed = store().commitAll(commits);
    List<ReserveResult> again =
        store().reserveAll(keys.stream().map(key -> reserveRequest(key, newToken())).toList());

    // then
    assertThat(acquiredAll).hasSize(n).allMatch(r -> r instanceof ReserveResult.Acquired);
    assertThat(committed).hasSize(n).containsOnly(SettleResult.APPLIED);
    assertThat(again).hasSize(n);
    for (int i = 0; i < n; i++) {
      assertThat(Describe.answer(again.get(i)))
          .as("duplicate %d of %d", i, n)
          .isEqualTo(Describe.answer(duplicate(now(), now() + WINDOW, new byte[] {(byte) i})));
    }
  }

  /** The keys and tokens of the batch-vs-single comparison, the same for both scopes. */
  private final class Keys {
    final DedupKey[] keys = new DedupKey[7];
    final long[] tokens = new long[12];
    long t0;
    long t1;

    Keys() {
      for (int i = 0; i < keys.length; i++) {
        keys[i] = newKey();
      }
      for (int i = 0; i < tokens.length; i++) {
        tokens[i] = newToken();
      }
    }

    List<DedupKey> all() {
      return List.of(keys);
    }

    List<ReserveRequest> reserves(Scope s) {
      Function<Integer, ReserveRequest> r =
          i -> new ReserveRequest(s, keys[i], fingerprint(i), tokens[i], now(), LEASE, FIXED);
      return List.of(
          r.apply(0), // absent: acquired
          r.apply(1), // in flight: in flight
          r.apply(2), // committed, same fingerprint: duplicate with result
          r.apply(3), // committed, other fingerprint: conflict
          r.apply(4), // lease ran out: acquired, EXPIRED_LEASE
          r.apply(5), // TTL passed: acquired, EXPIRED_KEY
          new ReserveRequest(s, keys[0], null, tokens[6], now(), LEASE, FIXED)); // again: in flight
    }

    List<CommitRequest> commits(Scope s) {
      return List.of(
          commit(s, 0, tokens[0], "zero"), // the holder
          commit(s, 1, tokens[7], "one"), // the holder since prepare()
          commit(s, 2, tokens[8], null), // committed key, foreign token
          commit(s, 4, tokens[4], null), // the new holder
          commit(s, 5, tokens[9], null), // a token that never held it
          commit(s, 6, tokens[10], null)); // a key never reserved
    }

    List<ReleaseRequest> releases(Scope s) {
      long at = now();
      return List.of(
          new ReleaseRequest(s, keys[0], tokens[0], at), // already committed
          new ReleaseRequest(s, keys[5], tokens[5], at), // the holder
          new ReleaseRequest(s, keys[5], tokens[5], at), // released just before
          new ReleaseRequest(s, keys[6], tokens[11], at)); // never reserved
    }

    private CommitRequest commit(Scope s, int key, long token, @Nullable String result) {
      return new CommitRequest(
          s, keys[key], token, now(), SLIDING, result == null ? null : utf8(result));
    }

    private @Nullable Fingerprint fingerprint(int i) {
      return i == 3 ? FP_B : FP_A;
    }
  }

  /**
   * Puts the keys of every scope in the states that {@link Keys#reserves} expects, step by step for
   * all scopes at the same instants (time only moves forward).
   */
  private void prepare(List<Scope> scopes, Keys k) {
    Ttl oneMinute = new Ttl(LEASE, Expiry.FIXED);
    k.t0 = now();
    for (Scope s : scopes) {
      reserveAndCommit(s, k.keys[2], FP_A, k.tokens[2] + 1, FIXED, "two");
      reserveAndCommit(s, k.keys[3], FP_A, k.tokens[3] + 1, FIXED, "three");
      store().reserve(new ReserveRequest(s, k.keys[4], FP_A, k.tokens[4] + 1, k.t0, LEASE, FIXED));
      reserveAndCommit(s, k.keys[5], FP_A, k.tokens[5] + 1, oneMinute, "five");
    }
    advanceTo(k.t0 + LEASE);
    k.t1 = now();
    for (Scope s : scopes) {
      store().reserve(new ReserveRequest(s, k.keys[1], FP_A, k.tokens[7], k.t1, LEASE, FIXED));
    }
  }

  private void reserveAndCommit(
      Scope s, DedupKey key, Fingerprint fp, long token, Ttl ttl, String result) {
    store().reserve(new ReserveRequest(s, key, fp, token, now(), LEASE, ttl));
    assertThat(store().commit(new CommitRequest(s, key, token, now(), ttl, utf8(result))))
        .isEqualTo(SettleResult.APPLIED);
  }
}
