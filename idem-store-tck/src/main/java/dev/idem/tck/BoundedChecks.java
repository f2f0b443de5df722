package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import org.junit.jupiter.api.Test;

/**
 * Stores that bound keys per scope ({@code maxKeys}) evict the least recently used key; a duplicate
 * hit is a use; a new key is never the first to go (no frequency-based admission); the bound is per
 * scope. Time moves a second between uses, so a store may order uses by their request times.
 * Inspections come last, so whether {@code inspect} counts as a use does not matter.
 */
abstract class BoundedChecks extends ContractChecks {

  BoundedChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void whenFullTheLeastRecentlyUsedKeyIsEvicted() {
    // given a full store
    DedupStore bounded = fx.boundedStore(3);
    DedupKey k1 = newKey();
    DedupKey k2 = newKey();
    DedupKey k3 = newKey();
    DedupKey k4 = newKey();
    use(bounded, scope(), k1);
    use(bounded, scope(), k2);
    use(bounded, scope(), k3);

    // when a fourth key comes
    use(bounded, scope(), k4);

    // then the first one went
    assertAbsent(bounded, scope(), k1);
    assertCommitted(bounded, scope(), k2, k3, k4);
    long token = newToken();
    assertAnswer(
        bounded.reserve(new ReserveRequest(scope(), k1, null, token, now(), LEASE, SLIDING)),
        acquired(token, now() + LEASE));
  }

  @Test
  void aDuplicateHitCountsAsAUse() {
    // given
    DedupStore bounded = fx.boundedStore(3);
    DedupKey k1 = newKey();
    DedupKey k2 = newKey();
    DedupKey k3 = newKey();
    DedupKey k4 = newKey();
    long c1 = use(bounded, scope(), k1);
    use(bounded, scope(), k2);
    use(bounded, scope(), k3);

    // when the oldest key is hit by a duplicate, then a new key comes
    advance(1_000);
    long hitAt = now();
    ReserveResult hit =
        bounded.reserve(new ReserveRequest(scope(), k1, null, newToken(), hitAt, LEASE, SLIDING));
    use(bounded, scope(), k4);

    // then the least recently used one went, not the one just hit
    assertAnswer(hit, duplicate(c1, hitAt + WINDOW, null));
    assertAbsent(bounded, scope(), k2);
    assertCommitted(bounded, scope(), k1, k3, k4);
  }

  @Test
  void aNewKeyIsNeverTheFirstToGoEvenAgainstAFrequentlyHitKey() {
    // given a key hit many times (a frequency-based policy would keep it)
    DedupStore bounded = fx.boundedStore(3);
    DedupKey hot = newKey();
    use(bounded, scope(), hot);
    for (int i = 0; i < 20; i++) {
      advance(1_000);
      bounded.reserve(new ReserveRequest(scope(), hot, null, newToken(), now(), LEASE, SLIDING));
    }

    // when new keys keep coming, each seen once
    DedupKey[] fresh = new DedupKey[6];
    for (int i = 0; i < fresh.length; i++) {
      fresh[i] = newKey();
      use(bounded, scope(), fresh[i]);
    }

    // then the store holds the three most recent keys
    assertCommitted(bounded, scope(), fresh[3], fresh[4], fresh[5]);
    assertAbsent(bounded, scope(), hot);
    assertAbsent(bounded, scope(), fresh[0]);
  }

  @Test
  void aNewReservationIsNotEvictedByItsOwnArrival() {
    // given a store that holds a single key
    DedupStore bounded = fx.boundedStore(1);
    DedupKey old = newKey();
    DedupKey fresh = newKey();
    use(bounded, scope(), old);
    advance(1_000);

    // when a new key is reserved and committed
    long token = newToken();
    ReserveResult answer =
        bounded.reserve(new ReserveRequest(scope(), fresh, null, token, now(), LEASE, SLIDING));
    SettleResult committed =
        bounded.commit(new CommitRequest(scope(), fresh, token, now(), SLIDING, null));

    // then the new key holds, the old one went
    assertAnswer(answer, acquired(token, now() + LEASE));
    assertSettle(committed, SettleResult.APPLIED, "commit of the newest key");
    assertCommitted(bounded, scope(), fresh);
    assertAbsent(bounded, scope(), old);
  }

  @Test
  void theBoundIsPerScope() {
    // given a scope at its bound
    DedupStore bounded = fx.boundedStore(2);
    Scope other = fx.newScope();
    DedupKey a1 = newKey();
    DedupKey a2 = newKey();
    use(bounded, scope(), a1);
    use(bounded, scope(), a2);

    // when another scope fills and overflows
    DedupKey b1 = newKey();
    DedupKey b2 = newKey();
    DedupKey b3 = newKey();
    use(bounded, other, b1);
    use(bounded, other, b2);
    use(bounded, other, b3);

    // then the first scope kept everything
    assertCommitted(bounded, scope(), a1, a2);
    assertCommitted(bounded, other, b2, b3);
    assertAbsent(bounded, other, b1);
  }

  /** Reserves and commits a new key a second after the previous use; returns the commit time. */
  private long use(DedupStore bounded, Scope scope, DedupKey key) {
    advance(1_000);
    long token = newToken();
    ReserveResult r =
        bounded.reserve(new ReserveRequest(scope, key, null, token, now(), LEASE, SLIDING));
    assertAnswer(r, acquired(token, now() + LEASE));
    assertSettle(
        bounded.commit(new CommitRequest(scope, key, token, now(), SLIDING, null)),
        SettleResult.APPLIED,
        "commit of " + key);
    return now();
  }

  private void assertCommitted(DedupStore bounded, Scope scope, DedupKey... keys) {
    for (DedupKey key : keys) {
      KeyState state = bounded.inspect(scope, key, now());
      assertThat(state)
          .as("%s in %s, which should have been kept", key, scope)
          .isInstanceOf(KeyState.Committed.class);
    }
  }

  private void assertAbsent(DedupStore bounded, Scope scope, DedupKey key) {
    assertThat(Describe.state(bounded.inspect(scope, key, now())))
        .as("%s in %s, which should have been evicted", key, scope)
        .isEqualTo(Describe.state(KeyState.ABSENT));
  }
}
