package dev.idem.spi;

import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.spi.StoredEntry.State;
import org.jspecify.annotations.Nullable;

/**
 * The dedup decision as a pure function: {@code (entry, command, now) -> (entry', answer)}. No I/O,
 * no clock, no locks; stores make it atomic and persist {@code entry'}. This class is the reference
 * every store is checked against.
 *
 * <pre>
 * ABSENT    --reserve-->                   IN_FLIGHT(token, lease, fingerprint)
 * IN_FLIGHT --extend(token)-->             IN_FLIGHT(token, later lease, fingerprint)
 * IN_FLIGHT --commit(token)-->             COMMITTED(expiry, fingerprint, result)
 * IN_FLIGHT --release(token) | lease ends--> ABSENT
 * COMMITTED --ttl passes | evicted | forget--> ABSENT
 * </pre>
 *
 * <p>Rules beyond the diagram: an entry whose deadline has passed reads as absent; a duplicate hit
 * with a sliding TTL restarts the window; a committed key whose stored fingerprint differs from a
 * non-null request fingerprint is a conflict (a null on either side is a plain duplicate); commit,
 * release and extend need the holding token and a running lease; an extend moves the lease deadline
 * to the later of the current one and {@code now + lease} (never earlier); a repeated commit with
 * the token that committed is applied without change.
 */
public final class DedupStateMachine {
  private DedupStateMachine() {}

  /**
   * The outcome of one command.
   *
   * @param next the entry to store afterwards, or null for "no entry" (delete)
   * @param answer what to return to the caller
   * @param changed whether {@code next} differs from the entry given, i.e. whether to write
   * @param <A> the answer's type
   */
  public record Transition<A>(@Nullable StoredEntry next, A answer, boolean changed) {}

  /**
   * Decides a reserve.
   *
   * @param current the stored entry, or null if none
   * @param r the request
   * @return the new entry and the outcome
   */
  public static Transition<ReserveResult> reserve(@Nullable StoredEntry current, ReserveRequest r) {
    long now = r.nowMillis();
    ReserveResult.Replaced replaced = ReserveResult.Replaced.NOTHING;
    if (current != null) {
      if (!current.isDeadAt(now)) {
        if (current.state() == State.IN_FLIGHT) {
          return new Transition<>(
              current, new ReserveResult.InFlight(current.deadlineMillis()), false);
        }
        if (conflicts(current.fingerprint(), r.fingerprint())) {
          return new Transition<>(
              current, new ReserveResult.Conflict(current.sinceMillis()), false);
        }
        StoredEntry next = current;
        if (r.ttl().expiry() == Expiry.SLIDING && r.ttl().expires()) {
          long refreshed = r.ttl().expiresAt(now);
          if (refreshed != current.deadlineMillis()) {
            next =
                new StoredEntry(
                    State.COMMITTED,
                    current.token(),
                    current.sinceMillis(),
                    refreshed,
                    current.fingerprint(),
                    current.result());
          }
        }
        return new Transition<>(
            next,
            new ReserveResult.Duplicate(
                current.sinceMillis(), next.deadlineMillis(), current.result()),
            next != current);
      }
      replaced =
          current.state() == State.IN_FLIGHT
              ? ReserveResult.Replaced.EXPIRED_LEASE
              : ReserveResult.Replaced.EXPIRED_KEY;
    }
    long leaseUntil = r.leaseUntil();
    StoredEntry next =
        new StoredEntry(State.IN_FLIGHT, r.token(), now, leaseUntil, r.fingerprint(), null);
    return new Transition<>(
        next, new ReserveResult.Acquired(r.token(), leaseUntil, replaced), true);
  }

  /**
   * Decides a commit.
   *
   * @param current the stored entry, or null if none
   * @param c the request
   * @return the new entry and the result
   */
  public static Transition<SettleResult> commit(@Nullable StoredEntry current, CommitRequest c) {
    if (current == null || current.token() != c.token()) {
      return new Transition<>(current, SettleResult.STALE, false);
    }
    if (current.state() == State.COMMITTED) {
      // A retried commit (its first outcome was unknown) with the token that committed.
      return current.isDeadAt(c.nowMillis())
          ? new Transition<>(current, SettleResult.STALE, false)
          : new Transition<>(current, SettleResult.APPLIED, false);
    }
    if (current.isDeadAt(c.nowMillis())) {
      return new Transition<>(current, SettleResult.STALE, false);
    }
    StoredEntry next =
        new StoredEntry(
            State.COMMITTED,
            c.token(),
            c.nowMillis(),
            c.ttl().expiresAt(c.nowMillis()),
            current.fingerprint(),
            c.result());
    return new Transition<>(next, SettleResult.APPLIED, true);
  }

  /**
   * Decides a release.
   *
   * @param current the stored entry, or null if none
   * @param r the request
   * @return the new entry (null: delete) and the result
   */
  public static Transition<SettleResult> release(@Nullable StoredEntry current, ReleaseRequest r) {
    if (current == null
        || current.state() != State.IN_FLIGHT
        || current.token() != r.token()
        || current.isDeadAt(r.nowMillis())) {
      return new Transition<>(current, SettleResult.STALE, false);
    }
    return new Transition<>(null, SettleResult.APPLIED, true);
  }

  /**
   * Decides an extend (a lease renewal): applied if the entry is in flight under the request's
   * token and its lease runs at the request's time; the deadline becomes the later of the current
   * one and the requested one, so a renewal never shortens a lease. Everything else (absent,
   * committed, another token, a lapsed lease) is stale and changes nothing: a holder whose lease
   * ran out must not resurrect its claim, even if nobody took the key over.
   *
   * @param current the stored entry, or null if none
   * @param e the request
   * @return the new entry and the result
   */
  public static Transition<SettleResult> extend(@Nullable StoredEntry current, ExtendRequest e) {
    if (current == null
        || current.state() != State.IN_FLIGHT
        || current.token() != e.token()
        || current.isDeadAt(e.nowMillis())) {
      return new Transition<>(current, SettleResult.STALE, false);
    }
    long until = e.leaseUntil();
    if (until <= current.deadlineMillis()) {
      return new Transition<>(current, SettleResult.APPLIED, false);
    }
    StoredEntry next =
        new StoredEntry(
            State.IN_FLIGHT,
            current.token(),
            current.sinceMillis(),
            until,
            current.fingerprint(),
            current.result());
    return new Transition<>(next, SettleResult.APPLIED, true);
  }

  /**
   * Reads an entry's state at a given time (no change).
   *
   * @param current the stored entry, or null if none
   * @param nowMillis the time to judge by
   * @return the state; dead entries are absent
   */
  public static KeyState inspect(@Nullable StoredEntry current, long nowMillis) {
    if (current == null || current.isDeadAt(nowMillis)) {
      return KeyState.ABSENT;
    }
    return current.state() == State.IN_FLIGHT
        ? new KeyState.InFlight(
            current.sinceMillis(), current.deadlineMillis(), current.fingerprint())
        : new KeyState.Committed(
            current.sinceMillis(),
            current.deadlineMillis(),
            current.fingerprint(),
            current.result());
  }

  private static boolean conflicts(@Nullable Fingerprint stored, @Nullable Fingerprint given) {
    return stored != null && given != null && !stored.equals(given);
  }
}
