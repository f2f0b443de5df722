package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Scopes never see each other's keys; {@code clear} and {@code forget} touch only their own scope,
 * even one whose name is a prefix of another's; keys are compared on all 32 bytes.
 */
abstract class ScopeChecks extends ContractChecks {

  ScopeChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void theSameKeyInTwoScopesIsTwoIndependentKeys() {
    // given
    Scope other = fx.newScope();
    DedupKey key = newKey();
    long t0 = now();
    long here = newToken();
    long there = newToken();

    // when both scopes reserve the same key, and only one commits
    var a = store().reserve(new ReserveRequest(scope(), key, FP_A, here, t0, LEASE, SLIDING));
    var b = store().reserve(new ReserveRequest(other, key, FP_B, there, t0, LEASE, SLIDING));
    assertSettle(commit(key, here), SettleResult.APPLIED, "commit in the first scope");

    // then
    assertAnswer(a, acquired(here, t0 + LEASE));
    assertAnswer(b, acquired(there, t0 + LEASE));
    assertState(inspect(key), committedState(t0, t0 + WINDOW, FP_A, null));
    assertState(store().inspect(other, key, now()), inFlightState(t0, t0 + LEASE, FP_B));
    assertThat(store().commit(commitRequest(key, there, SLIDING, null)))
        .as("a token of the other scope")
        .isEqualTo(SettleResult.STALE);
  }

  @Test
  void forgetTouchesOnlyItsScope() {
    Scope other = fx.newScope();
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, SLIDING);
    store().reserve(new ReserveRequest(other, key, null, newToken(), t0, LEASE, SLIDING));

    assertThat(store().forget(scope(), key)).as("forget in the first scope").isTrue();
    assertState(inspect(key), KeyState.ABSENT);
    assertState(store().inspect(other, key, now()), inFlightState(t0, t0 + LEASE, null));
  }

  @Test
  void clearRemovesEveryKeyOfItsScopeAndCountsThem() {
    // given two committed keys and one in flight
    DedupKey a = newKey();
    DedupKey b = newKey();
    DedupKey c = newKey();
    commitNew(a, null, SLIDING, utf8("a"));
    commitNew(b, null, FIXED, null);
    long holder = acquire(c);

    // when
    long removed = store().clear(scope());

    // then
    assertThat(removed).as("entries removed by clear").isEqualTo(3);
    for (DedupKey k : List.of(a, b, c)) {
      assertState(inspect(k), KeyState.ABSENT);
    }
    assertSettle(
        commit(c, holder), SettleResult.STALE, "commit by a holder whose scope was cleared");
    long next = newToken();
    assertAnswer(reserve(a, next), acquired(next, now() + LEASE));
  }

  @Test
  void clearOfAnEmptyScopeRemovesNothing() {
    assertThat(store().clear(scope())).as("clear of a scope with no keys").isZero();
  }

  @Test
  void clearTouchesNoOtherScopeNotEvenOnesWithASimilarName() {
    // given the same key in scopes whose names extend or share the cleared one's
    Scope cleared = scope();
    List<Scope> others =
        List.of(
            fx.siblingScope(cleared.step() + "2"),
            fx.siblingScope(cleared.step() + ".x"),
            Scope.of(cleared.pipeline() + "0", cleared.step()),
            Scope.of(cleared.pipeline() + "-", cleared.step()),
            fx.newScope());
    DedupKey key = newKey();
    long t0 = now();
    commitNew(key, SLIDING);
    for (Scope s : others) {
      store().reserve(new ReserveRequest(s, key, null, newToken(), t0, LEASE, SLIDING));
    }

    // when
    long removed = store().clear(cleared);

    // then
    assertThat(removed).as("entries removed by clear").isEqualTo(1);
    assertState(inspect(key), KeyState.ABSENT);
    for (Scope s : others) {
      assertThat(Describe.state(store().inspect(s, key, now())))
          .as("the key in %s after clearing %s", s, cleared)
          .isEqualTo(Describe.state(inFlightState(t0, t0 + LEASE, null)));
    }
  }

  @Test
  void keysThatDifferInOnlyOneWordAreDistinct() {
    // given keys equal in all but one of their four words (and so, often, in their hash)
    DedupKey base = DedupKey.ofWords(0x1111, 0x2222, 0x3333, 0x4444);
    List<DedupKey> neighbours =
        List.of(
            DedupKey.ofWords(0x1112, 0x2222, 0x3333, 0x4444),
            DedupKey.ofWords(0x1111, 0x2223, 0x3333, 0x4444),
            DedupKey.ofWords(0x1111, 0x2222, 0x3334, 0x4444),
            DedupKey.ofWords(0x1111, 0x2222, 0x3333, 0x4445),
            DedupKey.ofWords(0x1111, 0x2222, 0x3333, 0x4444 | Long.MIN_VALUE));

    // when the base is committed
    commitNew(base, SLIDING);

    // then every neighbour is still new
    for (DedupKey n : neighbours) {
      long token = newToken();
      assertThat(Describe.answer(reserve(n, token)))
          .as("reserve of %s next to the committed %s", n, base)
          .isEqualTo(Describe.answer(acquired(token, now() + LEASE)));
    }
    assertThat(reserve(base, newToken())).isInstanceOf(ReserveResult.Duplicate.class);
  }
}
