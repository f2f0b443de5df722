package dev.idem.server.pipeline;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.TimeSource;
import dev.idem.server.config.OrderingFailure;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Poison keys for sync delivery with an ordering key: an event that keeps failing blocks only its
 * own ordering key. Each failure (a request answered {@code delivery_failed} or {@code
 * transform_failed}) counts one attempt of that event and puts the key in backoff (the delivery's
 * {@code backoff} doubling per attempt up to {@code max_backoff}): until then the key's events, the
 * failing one included, are answered {@code 503} with {@code Retry-After}; after it, only the
 * failing event may run, later ones still wait behind it. After {@code ordering.max_attempts}:
 *
 * <ul>
 *   <li>{@code on_failure: dead_letter}: the event is given up (its sender was told {@code 502}
 *       each time; the last answer says it was given up) and the key moves on; a resend of it later
 *       is processed as a new event, after the ones that overtook it;
 *   <li>{@code on_failure: block}: the key stays blocked, every event of it answered {@code 503
 *       ordering_key_blocked}, until an operator skips the event (its key is committed, so resends
 *       are duplicates) or retries it (its attempts start again) through the admin API.
 * </ul>
 *
 * <p>A failing event that its sender stops resending holds its key for its backoff plus {@code
 * lock_ttl}, then the key moves on (unless blocked). The state of each key is kept in the
 * pipeline's store (scope {@code <pipeline>/poison}), so every instance honours it; the admin list
 * is instance-local: it shows the keys whose failures this instance recorded (skip and retry work
 * from any instance). Asynchronous delivery keeps its poison keys in the outbox instead ({@link
 * dev.idem.server.deliver.BlockedKeys}).
 */
public final class PoisonKeys {
  private static final Logger LOG = LoggerFactory.getLogger(PoisonKeys.class);

  /** Seconds a blocked key's events are told to wait. */
  static final long BLOCKED_RETRY_AFTER_SECONDS = 30;

  private final String pipeline;
  private final StoredValues records;
  private final int maxAttempts;
  private final OrderingFailure onFailure;
  private final Duration backoff;
  private final Duration maxBackoff;
  private final Duration lockTtl;
  private final TimeSource time;
  private final Set<String> seen = ConcurrentHashMap.newKeySet();

  /**
   * One ordering key's failing event.
   *
   * @param orderingKey the ordering key's text form
   * @param eventKey the failing event's key (hex)
   * @param attempts how many times it failed
   * @param nextAttemptMillis when it may be tried again (epoch millis)
   * @param blocked whether the key is blocked until an operator acts
   * @param sinceMillis when the event first failed (epoch millis; 0 if recorded by an older
   *     version)
   * @param lastError what the last failed attempt answered (its code and message; empty if recorded
   *     by an older version)
   */
  public record State(
      String orderingKey,
      String eventKey,
      int attempts,
      long nextAttemptMillis,
      boolean blocked,
      long sinceMillis,
      String lastError) {
    /** The longest last error kept, in characters. */
    static final int MAX_ERROR = 500;

    byte[] encode() {
      String error =
          lastError.length() <= MAX_ERROR ? lastError : lastError.substring(0, MAX_ERROR);
      return (eventKey
              + " "
              + attempts
              + " "
              + nextAttemptMillis
              + " "
              + (blocked ? 1 : 0)
              + " "
              + sinceMillis
              + " "
              + error)
          .getBytes(StandardCharsets.UTF_8);
    }

    static PoisonKeys.@Nullable State decode(String orderingKey, byte @Nullable [] bytes) {
      if (bytes == null) {
        return null;
      }
      // Older records have the first four fields only.
      String[] f = new String(bytes, StandardCharsets.UTF_8).split(" ", 6);
      if (f.length != 4 && f.length != 6) {
        return null;
      }
      try {
        return new State(
            orderingKey,
            f[0],
            Integer.parseInt(f[1]),
            Long.parseLong(f[2]),
            "1".equals(f[3]),
            f.length == 6 ? Long.parseLong(f[4]) : 0,
            f.length == 6 ? f[5] : "");
      } catch (NumberFormatException e) {
        return null;
      }
    }
  }

  /**
   * Creates the guard.
   *
   * @param pipeline the pipeline id
   * @param records a deduplicator on the pipeline's store, scope {@code <pipeline>/poison}, without
   *     TTL
   * @param maxAttempts {@code ordering.max_attempts}
   * @param onFailure {@code ordering.on_failure}
   * @param backoff the first backoff (the delivery's {@code backoff})
   * @param maxBackoff the longest backoff
   * @param lockTtl {@code ordering.lock_ttl}: how long after its backoff a failing event that is
   *     not resent holds its key
   * @param time the clock
   */
  public PoisonKeys(
      String pipeline,
      Deduplicator records,
      int maxAttempts,
      OrderingFailure onFailure,
      Duration backoff,
      Duration maxBackoff,
      Duration lockTtl,
      TimeSource time) {
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.records = new StoredValues(Objects.requireNonNull(records, "records"));
    this.maxAttempts = maxAttempts;
    this.onFailure = Objects.requireNonNull(onFailure, "onFailure");
    this.backoff = backoff;
    this.maxBackoff = maxBackoff;
    this.lockTtl = lockTtl;
    this.time = time;
  }

  /**
   * Returns the state of an ordering key, or null if no event of it is failing.
   *
   * @param orderingKey the key's text form
   * @return the state, or null
   */
  public PoisonKeys.@Nullable State state(String orderingKey) {
    return State.decode(orderingKey, records.read(orderingKey));
  }

  /**
   * Decides whether an event may run now (the caller holds its ordering key's turn).
   *
   * @param s the key's state
   * @param key the event's key
   * @return null to proceed, or the outcome that makes its sender come back later
   */
  Outcome.@Nullable Unavailable check(PoisonKeys.@Nullable State s, DedupKey key) {
    if (s == null) {
      return null;
    }
    long now = time.wallMillis();
    if (s.blocked()) {
      return new Outcome.Unavailable(
          key,
          "ordering_key_blocked",
          "an earlier event of this event's ordering key failed "
              + s.attempts()
              + " times and the key is blocked (ordering.on_failure: block) until an operator skips"
              + " or retries it; nothing was recorded for this one, retry later",
          BLOCKED_RETRY_AFTER_SECONDS);
    }
    boolean same = s.eventKey().equals(key.toHex());
    if (!same && now - s.nextAttemptMillis() >= lockTtl.toMillis()) {
      return null; // its sender stopped resending it: the key moves on
    }
    if (same && now >= s.nextAttemptMillis()) {
      return null; // the failing event's next attempt
    }
    long waitSeconds = Math.max(1, (s.nextAttemptMillis() - now + 999) / 1_000);
    return new Outcome.Unavailable(
        key,
        same ? "ordering_key_backoff" : "ordering_key_blocked",
        same
            ? "this event failed "
                + s.attempts()
                + " times; its ordering key backs off before the next attempt, retry later"
            : "an earlier event of this event's ordering key is failing and is retried first;"
                + " nothing was recorded for this one, retry later",
        same ? waitSeconds : Math.max(waitSeconds, 1));
  }

  /**
   * Counts a failed attempt of an event and says what its sender is told.
   *
   * @param orderingKey the key's text form
   * @param s the key's state before this attempt
   * @param f the failure
   * @return the outcome to answer
   */
  Outcome failed(String orderingKey, PoisonKeys.@Nullable State s, Outcome.Failed f) {
    String event = f.key().toHex();
    boolean same = s != null && s.eventKey().equals(event);
    int attempts = (same ? s.attempts() : 0) + 1;
    long now = time.wallMillis();
    long since = same && s.sinceMillis() > 0 ? s.sinceMillis() : now;
    seen.add(orderingKey);
    if (attempts >= maxAttempts && onFailure == OrderingFailure.DEAD_LETTER) {
      records.remove(orderingKey);
      seen.remove(orderingKey);
      LOG.warn(
          "pipeline={} ordering key={} key={} failed {} times (ordering.max_attempts); given up so"
              + " the key's later events proceed",
          pipeline,
          orderingKey,
          event,
          attempts);
      return new Outcome.Failed(
          f.key(),
          f.kind(),
          f.code(),
          f.message()
              + "; this was attempt "
              + attempts
              + " of ordering.max_attempts, so the event was given up and its ordering key's later"
              + " events proceed");
    }
    boolean block = attempts >= maxAttempts;
    long wait = block ? 0 : backoffMillis(attempts);
    State next =
        new State(
            orderingKey, event, attempts, now + wait, block, since, f.code() + ": " + f.message());
    if (!records.write(orderingKey, next.encode())) {
      LOG.warn("pipeline={} ordering key={} could not record its failure", pipeline, orderingKey);
    }
    LOG.warn(
        "pipeline={} ordering key={} key={} failed (attempt {} of {}); {}",
        pipeline,
        orderingKey,
        event,
        attempts,
        maxAttempts,
        block
            ? "the key is blocked until an operator skips or retries it"
            : "the key backs off " + wait + " ms");
    return new Outcome.Failed(
        f.key(),
        f.kind(),
        f.code(),
        f.message()
            + (block
                ? "; its ordering key is now blocked until an operator skips or retries it"
                : "; its ordering key backs off before the next attempt"));
  }

  /** The event that was failing succeeded: its key moves on. */
  void succeeded(String orderingKey) {
    records.remove(orderingKey);
    seen.remove(orderingKey);
  }

  private long backoffMillis(int attempts) {
    long first = Math.max(1, backoff.toMillis());
    long max = Math.max(first, maxBackoff.toMillis());
    int shift = Math.min(30, attempts - 1);
    return Math.min(max, first << shift);
  }

  /**
   * Lists the keys whose failures this instance recorded and that still fail or are blocked.
   *
   * @return the states
   */
  public List<State> list() {
    List<State> out = new ArrayList<>();
    for (String k : List.copyOf(seen)) {
      State s = state(k);
      if (s == null) {
        seen.remove(k);
      } else {
        out.add(s);
      }
    }
    return out;
  }

  /**
   * Skips a key's failing event: commits the event's key in the pipeline's dedup step (so resends
   * are duplicates) and lets the ordering key move on.
   *
   * @param orderingKey the key's text form
   * @param dedup the pipeline's dedup step
   * @return the state that was skipped, or null if the key was not failing
   */
  public PoisonKeys.@Nullable State skip(String orderingKey, Deduplicator dedup) {
    State s = state(orderingKey);
    if (s == null) {
      return null;
    }
    Decision d = dedup.reserve(DedupKey.parseHex(s.eventKey()));
    if (d instanceof Decision.Acquired a) {
      a.reservation().commit();
    }
    records.remove(orderingKey);
    seen.remove(orderingKey);
    return s;
  }

  /**
   * Retries a key's failing event: its attempts start again, so its sender's next resend runs.
   *
   * @param orderingKey the key's text form
   * @return the state that was cleared, or null if the key was not failing
   */
  public PoisonKeys.@Nullable State retry(String orderingKey) {
    State s = state(orderingKey);
    if (s == null) {
      return null;
    }
    records.remove(orderingKey);
    seen.remove(orderingKey);
    return s;
  }
}
