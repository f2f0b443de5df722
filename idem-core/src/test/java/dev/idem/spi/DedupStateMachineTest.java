package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.DedupStateMachine.Transition;
import dev.idem.spi.ReserveResult.Replaced;
import dev.idem.spi.StoredEntry.State;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Every branch of the reference lifecycle, and invariants over random inputs. */
class DedupStateMachineTest {
  private static final Scope SCOPE = Scope.of("orders");
  private static final DedupKey KEY = DedupKey.ofWords(1, 2, 3, 4);
  private static final long T0 = 1_800_000_000_000L;
  private static final long LEASE = 30_000;
  private static final Ttl SLIDING = new Ttl(600_000, Expiry.SLIDING);
  private static final Ttl FIXED = new Ttl(600_000, Expiry.FIXED);
  private static final Fingerprint FP_A = Fingerprint.sha256(bytes("a"));
  private static final Fingerprint FP_B = Fingerprint.sha256(bytes("b"));
  private static final long HOLDER = 42;

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static ReserveRequest reserve(long token, long now, @Nullable Fingerprint fp, Ttl ttl) {
    return new ReserveRequest(SCOPE, KEY, fp, token, now, LEASE, ttl);
  }

  private static CommitRequest commit(long token, long now, Ttl ttl, byte @Nullable [] result) {
    return new CommitRequest(SCOPE, KEY, token, now, ttl, result);
  }

  private static ReleaseRequest release(long token, long now) {
    return new ReleaseRequest(SCOPE, KEY, token, now);
  }

  private static StoredEntry inFlight(long since, @Nullable Fingerprint fp) {
    return new StoredEntry(State.IN_FLIGHT, HOLDER, since, since + LEASE, fp, null);
  }

  private static StoredEntry committed(long since, long deadline, @Nullable Fingerprint fp) {
    return new StoredEntry(State.COMMITTED, HOLDER, since, deadline, fp, bytes("result"));
  }

  @Nested
  class Reserve {
    @Test
    void anAbsentKeyIsAcquiredWithTheRequestsTokenLeaseAndFingerprint() {
      Transition<ReserveResult> t = DedupStateMachine.reserve(null, reserve(7, T0, FP_A, SLIDING));

      assertThat(t.answer()).isEqualTo(new ReserveResult.Acquired(7, T0 + LEASE, Replaced.NOTHING));
      assertThat(t.changed()).isTrue();
      assertThat(t.next())
          .isEqualTo(new StoredEntry(State.IN_FLIGHT, 7, T0, T0 + LEASE, FP_A, null));
    }

    @Test
    void aLiveInFlightKeyAnswersInFlightAndIsUnchanged() {
      StoredEntry current = inFlight(T0, FP_A);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0 + LEASE - 1, FP_B, SLIDING));

      assertThat(t.answer()).isEqualTo(new ReserveResult.InFlight(T0 + LEASE));
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void anInFlightKeyWhoseLeaseEndedIsTakenOverAsAnExpiredLease() {
      Transition<ReserveResult> t =
          DedupStateMachine.reserve(inFlight(T0, FP_A), reserve(7, T0 + LEASE, FP_B, SLIDING));

      assertThat(t.answer())
          .isEqualTo(new ReserveResult.Acquired(7, T0 + 2 * LEASE, Replaced.EXPIRED_LEASE));
      assertThat(t.changed()).isTrue();
      assertThat(t.next())
          .isEqualTo(new StoredEntry(State.IN_FLIGHT, 7, T0 + LEASE, T0 + 2 * LEASE, FP_B, null));
    }

    @Test
    void aCommittedKeyWhoseTtlPassedIsAcquiredAsAnExpiredKey() {
      Transition<ReserveResult> t =
          DedupStateMachine.reserve(
              committed(T0, T0 + 1_000, FP_A), reserve(7, T0 + 1_000, FP_B, SLIDING));

      assertThat(t.answer())
          .isEqualTo(new ReserveResult.Acquired(7, T0 + 1_000 + LEASE, Replaced.EXPIRED_KEY));
      assertThat(t.next().result()).as("the old result is gone").isNull();
      assertThat(t.next().fingerprint()).isEqualTo(FP_B);
    }

    @Test
    void aSlidingDuplicateRestartsTheWindowFromTheHit() {
      StoredEntry current = committed(T0, T0 + 600_000, FP_A);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0 + 100_000, FP_A, SLIDING));

      assertThat(t.answer()).isInstanceOf(ReserveResult.Duplicate.class);
      ReserveResult.Duplicate d = (ReserveResult.Duplicate) t.answer();
      assertThat(d.committedAtMillis()).isEqualTo(T0);
      assertThat(d.expiresAtMillis()).isEqualTo(T0 + 700_000);
      assertThat(d.result()).isEqualTo(bytes("result"));
      assertThat(t.changed()).isTrue();
      assertThat(t.next())
          .usingRecursiveComparison()
          .isEqualTo(
              new StoredEntry(State.COMMITTED, HOLDER, T0, T0 + 700_000, FP_A, bytes("result")));
    }

    @Test
    void aSlidingDuplicateAtTheSameDeadlineChangesNothing() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0, null, SLIDING));

      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
      assertThat(((ReserveResult.Duplicate) t.answer()).expiresAtMillis()).isEqualTo(T0 + 600_000);
    }

    @Test
    void aFixedDuplicateKeepsTheWindow() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0 + 599_999, null, FIXED));

      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
      assertThat(((ReserveResult.Duplicate) t.answer()).expiresAtMillis()).isEqualTo(T0 + 600_000);
    }

    @Test
    void aDuplicateWithoutTtlIsNotGivenOne() {
      StoredEntry current = committed(T0, Long.MAX_VALUE, null);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0 + 1_000_000, null, Ttl.NONE));

      assertThat(t.changed()).isFalse();
      assertThat(((ReserveResult.Duplicate) t.answer()).expiresAtMillis())
          .isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void anotherFingerprintOnALiveCommittedKeyIsAConflictAndChangesNothing() {
      StoredEntry current = committed(T0, T0 + 600_000, FP_A);

      Transition<ReserveResult> t =
          DedupStateMachine.reserve(current, reserve(7, T0 + 1, FP_B, SLIDING));

      assertThat(t.answer()).isEqualTo(new ReserveResult.Conflict(T0));
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void aNullFingerprintOnEitherSideIsADuplicate() {
      assertThat(
              DedupStateMachine.reserve(
                      committed(T0, T0 + 600_000, FP_A), reserve(7, T0 + 1, null, FIXED))
                  .answer())
          .isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(
              DedupStateMachine.reserve(
                      committed(T0, T0 + 600_000, null), reserve(7, T0 + 1, FP_B, FIXED))
                  .answer())
          .isInstanceOf(ReserveResult.Duplicate.class);
      assertThat(
              DedupStateMachine.reserve(
                      committed(T0, T0 + 600_000, FP_A), reserve(7, T0 + 1, FP_A, FIXED))
                  .answer())
          .isInstanceOf(ReserveResult.Duplicate.class);
    }

    @Test
    void theLeaseEndSaturatesInsteadOfOverflowing() {
      ReserveRequest r = new ReserveRequest(SCOPE, KEY, null, 7, T0, Long.MAX_VALUE, SLIDING);

      assertThat(r.leaseUntil()).isEqualTo(Long.MAX_VALUE);
      assertThat(DedupStateMachine.reserve(null, r).answer())
          .isEqualTo(new ReserveResult.Acquired(7, Long.MAX_VALUE, Replaced.NOTHING));
    }
  }

  @Nested
  class Commit {
    @Test
    void theHolderCommitsWithTheCommitTimeTtlAndResultKeepingTheFingerprint() {
      Transition<SettleResult> t =
          DedupStateMachine.commit(
              inFlight(T0, FP_A), commit(HOLDER, T0 + 5_000, SLIDING, bytes("r")));

      assertThat(t.answer()).isEqualTo(SettleResult.APPLIED);
      assertThat(t.changed()).isTrue();
      assertThat(t.next())
          .usingRecursiveComparison()
          .isEqualTo(
              new StoredEntry(State.COMMITTED, HOLDER, T0 + 5_000, T0 + 605_000, FP_A, bytes("r")));
    }

    @Test
    void withoutTtlTheKeyNeverExpires() {
      Transition<SettleResult> t =
          DedupStateMachine.commit(inFlight(T0, null), commit(HOLDER, T0, Ttl.NONE, null));

      assertThat(t.next().deadlineMillis()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void theWindowSaturatesInsteadOfOverflowing() {
      Transition<SettleResult> t =
          DedupStateMachine.commit(
              new StoredEntry(State.IN_FLIGHT, HOLDER, T0, Long.MAX_VALUE, null, null),
              commit(HOLDER, Long.MAX_VALUE - 10, new Ttl(600_000, Expiry.FIXED), null));

      assertThat(t.next().deadlineMillis()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void anAbsentKeyIsStale() {
      Transition<SettleResult> t =
          DedupStateMachine.commit(null, commit(HOLDER, T0, SLIDING, null));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isNull();
    }

    @Test
    void anotherTokenIsStaleAndChangesNothing() {
      StoredEntry current = inFlight(T0, null);

      Transition<SettleResult> t =
          DedupStateMachine.commit(current, commit(HOLDER + 1, T0, SLIDING, null));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void theHolderIsStaleFromTheLeasesEndOn() {
      StoredEntry current = inFlight(T0, null);

      assertThat(
              DedupStateMachine.commit(current, commit(HOLDER, T0 + LEASE - 1, SLIDING, null))
                  .answer())
          .isEqualTo(SettleResult.APPLIED);
      Transition<SettleResult> late =
          DedupStateMachine.commit(current, commit(HOLDER, T0 + LEASE, SLIDING, null));
      assertThat(late.answer()).isEqualTo(SettleResult.STALE);
      assertThat(late.changed()).isFalse();
      assertThat(late.next()).isSameAs(current);
    }

    @Test
    void aRepeatedCommitByTheCommittingTokenAppliesWithoutChange() {
      StoredEntry current = committed(T0, T0 + 600_000, FP_A);

      Transition<SettleResult> t =
          DedupStateMachine.commit(current, commit(HOLDER, T0 + 10, FIXED, bytes("other")));

      assertThat(t.answer()).isEqualTo(SettleResult.APPLIED);
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void aRepeatedCommitAfterTheTtlPassedIsStale() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      Transition<SettleResult> t =
          DedupStateMachine.commit(current, commit(HOLDER, T0 + 600_000, SLIDING, null));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.changed()).isFalse();
    }

    @Test
    void anotherTokenOnACommittedKeyIsStale() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      assertThat(
              DedupStateMachine.commit(current, commit(HOLDER + 1, T0 + 1, SLIDING, null)).answer())
          .isEqualTo(SettleResult.STALE);
    }
  }

  @Nested
  class Release {
    @Test
    void theHolderReleasesAndTheEntryIsDeleted() {
      Transition<SettleResult> t =
          DedupStateMachine.release(inFlight(T0, FP_A), release(HOLDER, T0 + 1));

      assertThat(t.answer()).isEqualTo(SettleResult.APPLIED);
      assertThat(t.changed()).isTrue();
      assertThat(t.next()).isNull();
    }

    @Test
    void anAbsentKeyIsStale() {
      Transition<SettleResult> t = DedupStateMachine.release(null, release(HOLDER, T0));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.changed()).isFalse();
    }

    @Test
    void aCommittedKeyIsStaleEvenForTheCommittingToken() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      Transition<SettleResult> t = DedupStateMachine.release(current, release(HOLDER, T0 + 1));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void anotherTokenIsStale() {
      StoredEntry current = inFlight(T0, null);

      Transition<SettleResult> t = DedupStateMachine.release(current, release(HOLDER - 1, T0 + 1));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void theHolderIsStaleFromTheLeasesEndOn() {
      StoredEntry current = inFlight(T0, null);

      assertThat(DedupStateMachine.release(current, release(HOLDER, T0 + LEASE - 1)).answer())
          .isEqualTo(SettleResult.APPLIED);
      assertThat(DedupStateMachine.release(current, release(HOLDER, T0 + LEASE)).answer())
          .isEqualTo(SettleResult.STALE);
    }
  }

  @Nested
  class Extend {
    private ExtendRequest extend(long token, long now, long lease) {
      return new ExtendRequest(SCOPE, KEY, token, now, lease);
    }

    @Test
    void theHolderMovesTheLeaseToNowPlusTheLeaseAndKeepsEverythingElse() {
      StoredEntry current = inFlight(T0, FP_A);

      Transition<SettleResult> t =
          DedupStateMachine.extend(current, extend(HOLDER, T0 + 20_000, LEASE));

      assertThat(t.answer()).isEqualTo(SettleResult.APPLIED);
      assertThat(t.changed()).isTrue();
      assertThat(t.next())
          .isEqualTo(new StoredEntry(State.IN_FLIGHT, HOLDER, T0, T0 + 20_000 + LEASE, FP_A, null));
    }

    @Test
    void aShorterLeaseThanWhatIsLeftIsAppliedWithoutChange() {
      StoredEntry current = inFlight(T0, null);

      Transition<SettleResult> t = DedupStateMachine.extend(current, extend(HOLDER, T0 + 1, 1_000));

      assertThat(t.answer()).isEqualTo(SettleResult.APPLIED);
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void anAbsentKeyIsStale() {
      Transition<SettleResult> t = DedupStateMachine.extend(null, extend(HOLDER, T0, LEASE));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.changed()).isFalse();
      assertThat(t.next()).isNull();
    }

    @Test
    void aCommittedKeyIsStaleEvenForTheCommittingToken() {
      StoredEntry current = committed(T0, T0 + 600_000, null);

      Transition<SettleResult> t =
          DedupStateMachine.extend(current, extend(HOLDER, T0 + 1, 10 * 600_000));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void anotherTokenIsStale() {
      StoredEntry current = inFlight(T0, null);

      Transition<SettleResult> t =
          DedupStateMachine.extend(current, extend(HOLDER + 1, T0 + 1, LEASE));

      assertThat(t.answer()).isEqualTo(SettleResult.STALE);
      assertThat(t.next()).isSameAs(current);
    }

    @Test
    void theHolderCannotRenewFromTheLeasesEndOn() {
      StoredEntry current = inFlight(T0, null);

      assertThat(DedupStateMachine.extend(current, extend(HOLDER, T0 + LEASE - 1, LEASE)).answer())
          .isEqualTo(SettleResult.APPLIED);
      Transition<SettleResult> lapsed =
          DedupStateMachine.extend(current, extend(HOLDER, T0 + LEASE, LEASE));
      assertThat(lapsed.answer()).isEqualTo(SettleResult.STALE);
      assertThat(lapsed.changed()).isFalse();
    }

    @Test
    void theRequestedDeadlineSaturatesInsteadOfOverflowing() {
      assertThat(extend(HOLDER, Long.MAX_VALUE - 5, 10).leaseUntil()).isEqualTo(Long.MAX_VALUE);
    }
  }

  @Nested
  class Inspect {
    @Test
    void noEntryIsAbsent() {
      assertThat(DedupStateMachine.inspect(null, T0)).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void anInFlightEntryShowsItsReservationUntilTheLeaseEnds() {
      StoredEntry e = inFlight(T0, FP_A);

      assertThat(DedupStateMachine.inspect(e, T0 + LEASE - 1))
          .isEqualTo(new KeyState.InFlight(T0, T0 + LEASE, FP_A));
      assertThat(DedupStateMachine.inspect(e, T0 + LEASE)).isEqualTo(KeyState.ABSENT);
    }

    @Test
    void aCommittedEntryShowsItsCommitUntilItExpires() {
      StoredEntry e = committed(T0, T0 + 600_000, FP_B);

      KeyState live = DedupStateMachine.inspect(e, T0 + 599_999);
      assertThat(live)
          .usingRecursiveComparison()
          .isEqualTo(new KeyState.Committed(T0, T0 + 600_000, FP_B, bytes("result")));
      assertThat(DedupStateMachine.inspect(e, T0 + 600_000)).isEqualTo(KeyState.ABSENT);
    }
  }

  @Nested
  class Invariants {
    private final long seed = new SplittableRandom().nextLong();
    private final SplittableRandom random = new SplittableRandom(seed);

    private @Nullable StoredEntry randomEntry() {
      int kind = random.nextInt(3);
      if (kind == 0) {
        return null;
      }
      long since = T0 + random.nextLong(-100_000, 100_000);
      long deadline =
          random.nextInt(10) == 0 ? Long.MAX_VALUE : since + random.nextLong(1, 200_000);
      return new StoredEntry(
          kind == 1 ? State.IN_FLIGHT : State.COMMITTED,
          1 + random.nextInt(3),
          since,
          deadline,
          randomFingerprint(),
          kind == 2 && random.nextBoolean() ? bytes("r") : null);
    }

    private @Nullable Fingerprint randomFingerprint() {
      int f = random.nextInt(3);
      return f == 0 ? null : f == 1 ? FP_A : FP_B;
    }

    private Ttl randomTtl() {
      return switch (random.nextInt(3)) {
        case 0 -> Ttl.NONE;
        case 1 -> new Ttl(1 + random.nextLong(300_000), Expiry.SLIDING);
        default -> new Ttl(1 + random.nextLong(300_000), Expiry.FIXED);
      };
    }

    @Test
    void everyTransitionIsConsistentWithWhatInspectSeesAfterwards() {
      for (int i = 0; i < 20_000; i++) {
        StoredEntry current = randomEntry();
        long now = T0 + random.nextLong(-50_000, 300_000);
        long token = 1 + random.nextInt(3);
        String context = "seed " + seed + ", case " + i + ": " + current + " at " + now;
        switch (random.nextInt(3)) {
          case 0 -> {
            ReserveRequest r =
                new ReserveRequest(
                    SCOPE,
                    KEY,
                    randomFingerprint(),
                    token,
                    now,
                    1 + random.nextLong(100_000),
                    randomTtl());
            Transition<ReserveResult> t = DedupStateMachine.reserve(current, r);
            assertThat(t.changed()).as(context).isEqualTo(t.next() != current);
            KeyState after = DedupStateMachine.inspect(t.next(), now);
            if (t.answer() instanceof ReserveResult.Acquired a) {
              assertThat(a.token()).as(context).isEqualTo(token);
              assertThat(after)
                  .as(context)
                  .isEqualTo(new KeyState.InFlight(now, r.leaseUntil(), r.fingerprint()));
              assertThat(a.replaced() == Replaced.NOTHING).as(context).isEqualTo(current == null);
            } else if (t.answer() instanceof ReserveResult.Duplicate d) {
              assertThat(after).as(context).isInstanceOf(KeyState.Committed.class);
              assertThat(((KeyState.Committed) after).expiresAtMillis())
                  .as(context)
                  .isEqualTo(d.expiresAtMillis());
            } else {
              assertThat(t.changed()).as(context).isFalse();
            }
          }
          case 1 -> {
            CommitRequest c = new CommitRequest(SCOPE, KEY, token, now, randomTtl(), null);
            Transition<SettleResult> t = DedupStateMachine.commit(current, c);
            assertThat(t.changed()).as(context).isEqualTo(t.next() != current);
            if (t.answer() == SettleResult.STALE) {
              assertThat(t.changed()).as(context).isFalse();
            } else {
              assertThat(DedupStateMachine.inspect(t.next(), now))
                  .as(context)
                  .isInstanceOf(KeyState.Committed.class);
              assertThat(t.next().token()).as(context).isEqualTo(token);
            }
          }
          default -> {
            Transition<SettleResult> t =
                DedupStateMachine.release(current, new ReleaseRequest(SCOPE, KEY, token, now));
            if (t.answer() == SettleResult.APPLIED) {
              assertThat(t.next()).as(context).isNull();
              assertThat(DedupStateMachine.inspect(current, now))
                  .as(context)
                  .isInstanceOf(KeyState.InFlight.class);
            } else {
              assertThat(t.next()).as(context).isSameAs(current);
            }
          }
        }
      }
    }
  }
}
