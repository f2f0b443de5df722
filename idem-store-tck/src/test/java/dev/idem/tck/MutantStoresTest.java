package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedMethod;

import dev.idem.tck.MutantStores.CheckThenActContract;
import dev.idem.tck.MutantStores.ClaimIgnoresOrderingKeysContract;
import dev.idem.tck.MutantStores.ClearWipesEveryScopeContract;
import dev.idem.tck.MutantStores.CommitIgnoresLeaseContract;
import dev.idem.tck.MutantStores.EagerSweeperContract;
import dev.idem.tck.MutantStores.EnqueuesOnStaleCommitContract;
import dev.idem.tck.MutantStores.ExtendIgnoresTokenContract;
import dev.idem.tck.MutantStores.FifoEvictionContract;
import dev.idem.tck.MutantStores.ForgetsReservationsOnReopenContract;
import dev.idem.tck.MutantStores.LenientLimitsContract;
import dev.idem.tck.MutantStores.LosesEmptyResultContract;
import dev.idem.tck.MutantStores.NoSlidingRefreshContract;
import dev.idem.tck.MutantStores.PendingClaimsContract;
import dev.idem.tck.MutantStores.ReleaseIgnoresTokenContract;
import dev.idem.tck.MutantStores.RequeueDropsOrderingKeyContract;
import dev.idem.tck.MutantStores.RequeueKeepsAttemptsContract;
import dev.idem.tck.MutantStores.SettlesWithoutFenceContract;
import dev.idem.tck.MutantStores.SnapshotBatchContract;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherConfig;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The suite can fail: each broken store makes the contract check aimed at its bug fail with an
 * {@link AssertionError}, while the same check passes on the reference store. The checks run
 * through the JUnit Platform launcher, with their real lifecycle.
 */
class MutantStoresTest {

  /** One finished test of a launched run. */
  record Finished(String name, TestExecutionResult result) {
    boolean failed() {
      return result.getStatus() == TestExecutionResult.Status.FAILED;
    }
  }

  static Stream<Arguments> mutants() {
    return Stream.of(
        Arguments.of(
            ReleaseIgnoresTokenContract.class,
            DedupStoreContract.Fencing.class,
            "releaseWithAnotherTokenIsStaleAndChangesNothing"),
        Arguments.of(
            ExtendIgnoresTokenContract.class,
            DedupStoreContract.Extend.class,
            "extendWithAnotherTokenIsStaleAndChangesNothing"),
        Arguments.of(
            ExtendIgnoresTokenContract.class,
            DedupStoreContract.Extend.class,
            "afterATakeoverTheOldTokenCannotExtend"),
        Arguments.of(
            CommitIgnoresLeaseContract.class,
            DedupStoreContract.Fencing.class,
            "commitWhenTheLeaseRanOutIsStaleEvenIfNobodyTookOver"),
        Arguments.of(
            NoSlidingRefreshContract.class,
            DedupStoreContract.LeasesAndTtls.class,
            "aSlidingWindowRestartsAtEveryDuplicateHit"),
        Arguments.of(
            CheckThenActContract.class,
            DedupStoreContract.Concurrency.class,
            "exactlyOneThreadAcquiresEachKeyAndNoCommitIsLost"),
        Arguments.of(
            CheckThenActContract.class,
            DedupStoreContract.Concurrency.class,
            "twoHoldersNeverOverlapWhileKeysAreReleasedAndTakenAgain"),
        Arguments.of(
            ClearWipesEveryScopeContract.class,
            DedupStoreContract.Scopes.class,
            "clearTouchesNoOtherScopeNotEvenOnesWithASimilarName"),
        Arguments.of(
            SnapshotBatchContract.class,
            DedupStoreContract.Batches.class,
            "aKeyTwiceInOneReserveAllIsAcquiredAtMostOnce"),
        Arguments.of(
            EnqueuesOnStaleCommitContract.class,
            DedupStoreContract.Outbox.class,
            "aStaleCommitEnqueuesNothing"),
        Arguments.of(
            PendingClaimsContract.class,
            DedupStoreContract.Outbox.class,
            "pendingListsWaitingEntriesWithAttemptsNextAttemptAndLastErrorAndChangesNothing"),
        Arguments.of(
            RequeueKeepsAttemptsContract.class,
            DedupStoreContract.DeadLetters.class,
            "requeueMovesTheDeadLetterBackUntriedAndLeavesTheKeyCommitted"),
        Arguments.of(
            RequeueDropsOrderingKeyContract.class,
            DedupStoreContract.OrderedOutbox.class,
            "aRequeuedDeadLetterKeepsItsOrderingKeyAndWaitsItsTurn"),
        Arguments.of(
            ClaimIgnoresOrderingKeysContract.class,
            DedupStoreContract.OrderedOutbox.class,
            "aClaimHandsOutOnlyTheOldestEntryOfEachOrderingKey"),
        Arguments.of(
            ClaimIgnoresOrderingKeysContract.class,
            DedupStoreContract.OrderedOutbox.class,
            "concurrentClaimersNeverHoldTwoEntriesOfOneKeyAndDeliverEachKeyInOrder"),
        Arguments.of(
            SettlesWithoutFenceContract.class,
            DedupStoreContract.OrderedOutbox.class,
            "aStaleClaimersLateAnswersChangeNothing"),
        Arguments.of(
            LenientLimitsContract.class,
            DedupStoreContract.OrderedOutbox.class,
            "numbersBelowOneAreRejectedAlikeByEveryStore"),
        Arguments.of(
            FifoEvictionContract.class,
            DedupStoreContract.BoundedKeys.class,
            "aDuplicateHitCountsAsAUse"),
        Arguments.of(
            ForgetsReservationsOnReopenContract.class,
            DedupStoreContract.Durability.class,
            "inFlightReservationsSurviveAReopenWithTheirLease"),
        Arguments.of(
            EagerSweeperContract.class,
            DedupStoreContract.Sweeping.class,
            "sweepRemovesDeadEntriesAndNeverLiveOnes"));
  }

  @ParameterizedTest(name = "{0} fails {1}.{2}")
  @MethodSource("mutants")
  void theCheckAimedAtABugFailsOnAStoreWithIt(
      Class<? extends DedupStoreContract> mutant, Class<?> group, String check) {
    // given the check passes on the reference store
    List<Finished> reference =
        run(selectNestedMethod(List.of(ReferenceStoreContractTest.class), group, check));
    assertThat(reference).as("runs of %s on the reference store", check).isNotEmpty();
    assertThat(reference).as("%s on the reference store", check).noneMatch(Finished::failed);

    // when it runs on the broken store
    List<Finished> broken = run(selectNestedMethod(List.of(mutant), group, check));

    // then it fails, by an assertion (not by a crash of the suite)
    assertThat(broken).as("runs of %s on %s", check, mutant.getSimpleName()).isNotEmpty();
    assertThat(broken).as("%s on %s", check, mutant.getSimpleName()).allMatch(Finished::failed);
    assertThat(broken)
        .allSatisfy(
            f ->
                assertThat(f.result().getThrowable())
                    .get()
                    .as("why %s failed", f.name())
                    .isInstanceOf(AssertionError.class));
  }

  @Test
  void theReplayCheckFailsExactlyForTheResultAStoreLoses() {
    List<Finished> runs =
        run(
            selectNestedMethod(
                List.of(LosesEmptyResultContract.class),
                DedupStoreContract.Replay.class,
                "aDuplicateGetsTheStoredResultByteForByte",
                "java.lang.String, byte[]"));

    assertThat(runs).hasSize(6);
    assertThat(runs.stream().filter(Finished::failed).map(Finished::name))
        .singleElement()
        .asString()
        .contains("empty");
  }

  static Stream<Arguments> mutantsTheModelFinds() {
    return Stream.of(
        Arguments.of(ReleaseIgnoresTokenContract.class),
        Arguments.of(ExtendIgnoresTokenContract.class),
        Arguments.of(CommitIgnoresLeaseContract.class),
        Arguments.of(NoSlidingRefreshContract.class),
        Arguments.of(LosesEmptyResultContract.class),
        Arguments.of(ClearWipesEveryScopeContract.class),
        Arguments.of(SnapshotBatchContract.class));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("mutantsTheModelFinds")
  void theRandomizedModelFindsTheBugAndPrintsItsSeed(Class<? extends DedupStoreContract> mutant) {
    // given a fixed seed
    String previous = System.getProperty(ModelChecks.SEED_PROPERTY);
    System.setProperty(ModelChecks.SEED_PROPERTY, "20261130");
    List<Finished> runs;
    try {
      // when
      runs =
          run(
              selectNestedMethod(
                  List.of(mutant),
                  DedupStoreContract.RandomizedModel.class,
                  "randomOperationsAnswerExactlyAsTheReferenceStateMachine"));
    } finally {
      if (previous == null) {
        System.clearProperty(ModelChecks.SEED_PROPERTY);
      } else {
        System.setProperty(ModelChecks.SEED_PROPERTY, previous);
      }
    }

    // then it fails, says how to replay it, and shows what led there
    assertThat(runs).singleElement().matches(Finished::failed, "failed");
    Throwable why = runs.get(0).result().getThrowable().orElseThrow();
    assertThat(why)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("seed 20261130")
        .hasMessageContaining("-Didem.tck.seed=20261130")
        .hasMessageContaining("last ")
        .hasMessageContaining("operations (times from the start)");
  }

  @Test
  void theModelPassesOnTheReferenceStoreWithTheSameSeed() {
    String previous = System.getProperty(ModelChecks.SEED_PROPERTY);
    System.setProperty(ModelChecks.SEED_PROPERTY, "20261130");
    try {
      List<Finished> runs =
          run(
              selectNestedMethod(
                  List.of(ReferenceStoreContractTest.class),
                  DedupStoreContract.RandomizedModel.class,
                  "randomOperationsAnswerExactlyAsTheReferenceStateMachine"));
      assertThat(runs).singleElement().matches(f -> !f.failed(), "passed");
    } finally {
      if (previous == null) {
        System.clearProperty(ModelChecks.SEED_PROPERTY);
      } else {
        System.setProperty(ModelChecks.SEED_PROPERTY, previous);
      }
    }
  }

  private static List<Finished> run(DiscoverySelector selector) {
    List<Finished> finished = new ArrayList<>();
    // Without the auto-registered listeners: SkipReasonListener would print the skips of these
    // inner runs on the console as if they were the build's.
    Launcher launcher =
        LauncherFactory.create(
            LauncherConfig.builder().enableTestExecutionListenerAutoRegistration(false).build());
    launcher.execute(
        LauncherDiscoveryRequestBuilder.request().selectors(selector).build(),
        new TestExecutionListener() {
          @Override
          public void executionFinished(TestIdentifier id, TestExecutionResult result) {
            if (id.isTest()) {
              finished.add(new Finished(id.getDisplayName(), result));
            }
          }
        });
    return finished;
  }
}
