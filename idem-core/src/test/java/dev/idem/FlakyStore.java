package dev.idem;

import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.SettleResult;
import java.util.List;

/**
 * A {@link MapDedupStore} whose settlements can be made to fail as an unreachable store fails: a
 * test double for the "store unavailable" paths, not a claim about any real store.
 */
final class FlakyStore extends MapDedupStore {
  volatile boolean commitsFail;
  volatile boolean releasesFail;

  private static StoreUnavailableException down(String what) {
    return new StoreUnavailableException(
        "flaky", true, what + " timed out after the request was sent");
  }

  @Override
  public synchronized SettleResult commit(CommitRequest c) {
    if (commitsFail) {
      throw down("commit");
    }
    return super.commit(c);
  }

  @Override
  public synchronized List<SettleResult> commitAll(List<CommitRequest> requests) {
    if (commitsFail) {
      throw down("commitAll");
    }
    return super.commitAll(requests);
  }

  @Override
  public synchronized SettleResult release(ReleaseRequest r) {
    if (releasesFail) {
      throw down("release");
    }
    return super.release(r);
  }
}
