package dev.idem.server.deliver;

import dev.idem.DedupKey;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Poison keys of asynchronous delivery with {@code ordering.on_failure: block}, expressed in the
 * outbox's own state, so that every instance sharing the store sees them and they survive restarts
 * without a new store operation:
 *
 * <ol>
 *   <li>An ordered entry that fails for good (its retries are exhausted, or the failure is not
 *       retryable) is not dead lettered: the dispatcher reschedules it (fenced, with its claim) to
 *       {@link #PARKED_UNTIL}, with a last error that starts with a <em>blocked marker</em> ({@code
 *       [idem:blocked since=<epoch ms> attempts=<n>] <error>}). It stays its ordering key's head,
 *       so the store hands out no later entry of that key; other keys go on.
 *   <li>{@link #list} reads the waiting entries ({@link OutboxStore#pending}) and returns those
 *       with the marker.
 *   <li>{@link #skip} dead-letters the blocked entry (unconditionally: it is parked, nobody holds a
 *       claim on it), so the key's next entry becomes its head; the dead letter can be requeued
 *       later like any other.
 *   <li>{@link #retry} makes it due now with a last error that starts with an <em>attempts
 *       marker</em> ({@code [idem:attempts-from=<claims>] <error>}): the dispatcher numbers its
 *       attempts from there, so it gets all its retries again, in place, still its key's head.
 * </ol>
 *
 * <p>The markers are only ever read from the entry's last error, which the dispatcher writes: a
 * downstream's error text is written after them, never before.
 */
public final class BlockedKeys {

  /** The due time of a blocked entry: 9999-12-31T23:59:59.999Z, exact in every store's encoding. */
  public static final long PARKED_UNTIL = 253_402_300_799_999L;

  /** How many waiting entries {@link #list} looks through, oldest first. */
  public static final int SCAN_LIMIT = 10_000;

  private static final Pattern BLOCKED =
      Pattern.compile("^\\[idem:blocked since=(\\d+) attempts=(\\d+)] ?(.*)$", Pattern.DOTALL);
  private static final Pattern ATTEMPTS_FROM =
      Pattern.compile("^\\[idem:attempts-from=(\\d+)] ?(.*)$", Pattern.DOTALL);

  private BlockedKeys() {}

  /**
   * One blocked ordering key: its head entry, parked until an operator acts.
   *
   * @param id the outbox entry's id (the blocked event's id in the outbox)
   * @param orderingKey the ordering key's text form
   * @param key the event's dedup key
   * @param attempts how many deliveries were tried before it was blocked
   * @param claims how many times the store handed it out in all ({@link PendingEntry#attempts()})
   * @param sinceMillis when it was blocked (epoch millis)
   * @param lastError the error of the last attempt
   */
  public record Blocked(
      long id,
      String orderingKey,
      DedupKey key,
      int attempts,
      int claims,
      long sinceMillis,
      String lastError) {
    /** Validates the fields. */
    public Blocked {
      Objects.requireNonNull(orderingKey, "orderingKey");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(lastError, "lastError");
    }
  }

  /**
   * The last error a blocked entry is parked with.
   *
   * @param sinceMillis when it was blocked
   * @param attempts the attempts it had
   * @param error the last attempt's error
   * @return the marked error
   */
  static String blockedError(long sinceMillis, int attempts, String error) {
    return "[idem:blocked since=" + sinceMillis + " attempts=" + attempts + "] " + error;
  }

  /**
   * The last error of an entry whose attempts are numbered from {@code claims} (an operator retried
   * it); {@code claims = 0} leaves the error as it is.
   *
   * @param claims the claims that do not count as attempts
   * @param error the error
   * @return the marked error
   */
  static String attemptsFromError(int claims, String error) {
    return claims <= 0 ? error : "[idem:attempts-from=" + claims + "] " + error;
  }

  /**
   * How many of an entry's claims do not count as attempts, from the last error the dispatcher
   * wrote for it (an operator's retry starts its attempts again).
   *
   * @param lastError the entry's last error, or null
   * @return the claims to subtract, 0 if none
   */
  static int attemptsFrom(@Nullable String lastError) {
    if (lastError == null) {
      return 0;
    }
    Matcher m = ATTEMPTS_FROM.matcher(lastError);
    return m.matches() ? parseInt(m.group(1)) : 0;
  }

  /**
   * Says whether an entry's last error is the blocked marker.
   *
   * @param lastError the entry's last error, or null
   * @return whether the entry is parked as blocked
   */
  public static boolean isBlocked(@Nullable String lastError) {
    return lastError != null && BLOCKED.matcher(lastError).matches();
  }

  /**
   * Returns a last error without the markers the dispatcher puts in front of it, for display.
   *
   * @param lastError the stored last error, or null
   * @return the error as the sink reported it, or null
   */
  public static @Nullable String displayError(@Nullable String lastError) {
    if (lastError == null) {
      return null;
    }
    Matcher b = BLOCKED.matcher(lastError);
    if (b.matches()) {
      return displayError(b.group(3));
    }
    Matcher a = ATTEMPTS_FROM.matcher(lastError);
    return a.matches() ? a.group(2) : lastError;
  }

  /**
   * Reads a waiting entry as a blocked key, or empty if it is not blocked (or its payload cannot be
   * decoded, or it has no ordering key).
   *
   * @param e the entry
   * @param decoder turns the payload back into its delivery
   * @return the blocked key, or empty
   */
  public static Optional<Blocked> of(PendingEntry e, Function<byte[], Delivery> decoder) {
    if (e.lastError() == null) {
      return Optional.empty();
    }
    Matcher m = BLOCKED.matcher(e.lastError());
    if (!m.matches()) {
      return Optional.empty();
    }
    String orderingKey;
    try {
      orderingKey = decoder.apply(e.payload()).orderingKey();
    } catch (RuntimeException ex) {
      return Optional.empty();
    }
    if (orderingKey == null) {
      return Optional.empty();
    }
    String error = Objects.requireNonNullElse(displayError(m.group(3)), "");
    return Optional.of(
        new Blocked(
            e.id(),
            orderingKey,
            e.key(),
            parseInt(m.group(2)),
            e.attempts(),
            Long.parseLong(m.group(1)),
            error));
  }

  /**
   * Lists the blocked keys of a queue, oldest first, among its first {@link #SCAN_LIMIT} waiting
   * entries. Read-only.
   *
   * @param outbox the outbox
   * @param queue the queue (the pipeline id)
   * @param decoder turns payloads back into deliveries
   * @return the blocked keys
   */
  public static List<Blocked> list(
      OutboxStore outbox, String queue, Function<byte[], Delivery> decoder) {
    List<Blocked> out = new ArrayList<>();
    for (PendingEntry e : outbox.pending(queue, SCAN_LIMIT)) {
      of(e, decoder).ifPresent(out::add);
    }
    return out;
  }

  /**
   * Finds the blocked head of one ordering key.
   *
   * @param outbox the outbox
   * @param queue the queue
   * @param orderingKey the ordering key's text form
   * @param decoder turns payloads back into deliveries
   * @return the blocked key, or empty if the key is not blocked
   */
  public static Optional<Blocked> find(
      OutboxStore outbox, String queue, String orderingKey, Function<byte[], Delivery> decoder) {
    return list(outbox, queue, decoder).stream()
        .filter(b -> b.orderingKey().equals(orderingKey))
        .findFirst();
  }

  /**
   * Skips a blocked key's head: moves it to the dead letters, so the key's next entry becomes its
   * head and is delivered.
   *
   * @param outbox the outbox
   * @param queue the queue
   * @param blocked the blocked key, as {@link #find} returned it
   * @param nowMillis the wall-clock time
   */
  public static void skip(OutboxStore outbox, String queue, Blocked blocked, long nowMillis) {
    outbox.deadLetter(
        queue,
        blocked.id(),
        "skipped by an operator while its ordering key was blocked (ordering.on_failure: block)"
            + " after "
            + blocked.attempts()
            + (blocked.attempts() == 1 ? " attempt: " : " attempts: ")
            + blocked.lastError(),
        nowMillis);
  }

  /**
   * Retries a blocked key's head: makes it due now, in place (still its key's head), with all its
   * attempts again.
   *
   * @param outbox the outbox
   * @param queue the queue
   * @param blocked the blocked key, as {@link #find} returned it
   * @param nowMillis the wall-clock time
   */
  public static void retry(OutboxStore outbox, String queue, Blocked blocked, long nowMillis) {
    outbox.reschedule(
        queue,
        blocked.id(),
        nowMillis,
        attemptsFromError(
            blocked.claims(),
            "retried by an operator after being blocked: " + blocked.lastError()));
  }

  private static int parseInt(String digits) {
    try {
      return Integer.parseInt(digits);
    } catch (NumberFormatException e) {
      return Integer.MAX_VALUE;
    }
  }
}
