package dev.idem.spi;

import java.util.Comparator;

/**
 * Which dead letters of a queue {@link OutboxStore#deadLetters(String, DeadLetterQuery)} lists: the
 * newest first (by {@link DeadLetter#deadAtMillis()}, then by id, both descending), those given up
 * in {@code [sinceMillis, untilMillis)}, after a page's last one, at most {@code limit}.
 *
 * <p>Paging: pass the last dead letter of a page to {@link #after(DeadLetter)} to get the next
 * page; a dead letter purged or requeued meanwhile never shifts the later pages.
 *
 * @param limit the most to return, at least 1
 * @param sinceMillis the earliest dead-letter time listed (inclusive); {@link Long#MIN_VALUE} for
 *     no bound
 * @param untilMillis the latest dead-letter time listed (exclusive); {@link Long#MAX_VALUE} for no
 *     bound
 * @param beforeDeadAtMillis with {@code beforeId}, the position after which the page starts: only
 *     dead letters older in the listing order are returned; {@link Long#MAX_VALUE} (with {@code
 *     beforeId} {@link Long#MAX_VALUE}) for the first page
 * @param beforeId see {@code beforeDeadAtMillis}
 */
public record DeadLetterQuery(
    int limit, long sinceMillis, long untilMillis, long beforeDeadAtMillis, long beforeId) {

  /** The listing order: newest first, by dead-letter time, then by id, both descending. */
  public static final Comparator<DeadLetter> NEWEST_FIRST =
      Comparator.comparingLong(DeadLetter::deadAtMillis)
          .thenComparingLong(DeadLetter::id)
          .reversed();

  /** Validates the fields. */
  public DeadLetterQuery {
    if (limit < 1) {
      throw new IllegalArgumentException("dead-letter limit must be at least 1, got " + limit);
    }
  }

  /**
   * The first page of every dead letter.
   *
   * @param limit the most to return, at least 1
   * @return the query
   * @throws IllegalArgumentException if {@code limit} is below 1
   */
  public static DeadLetterQuery newest(int limit) {
    return new DeadLetterQuery(
        limit, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE);
  }

  /**
   * Lists only dead letters given up at or after a time.
   *
   * @param millis the earliest dead-letter time, inclusive
   * @return a copy with the bound
   */
  public DeadLetterQuery since(long millis) {
    return new DeadLetterQuery(limit, millis, untilMillis, beforeDeadAtMillis, beforeId);
  }

  /**
   * Lists only dead letters given up before a time.
   *
   * @param millis the latest dead-letter time, exclusive
   * @return a copy with the bound
   */
  public DeadLetterQuery until(long millis) {
    return new DeadLetterQuery(limit, sinceMillis, millis, beforeDeadAtMillis, beforeId);
  }

  /**
   * The page after a dead letter (normally the last one of the previous page).
   *
   * @param last the dead letter the page starts after
   * @return a copy positioned after it
   */
  public DeadLetterQuery after(DeadLetter last) {
    return after(last.deadAtMillis(), last.id());
  }

  /**
   * The page after a position in the listing order.
   *
   * @param deadAtMillis the dead-letter time of the position
   * @param id the id of the position
   * @return a copy positioned after it
   */
  public DeadLetterQuery after(long deadAtMillis, long id) {
    return new DeadLetterQuery(limit, sinceMillis, untilMillis, deadAtMillis, id);
  }

  /**
   * Whether a dead letter is in the query's time range and after its position (the limit aside):
   * for stores that filter in memory.
   *
   * @param d the dead letter
   * @return whether it belongs to the page
   */
  public boolean matches(DeadLetter d) {
    long at = d.deadAtMillis();
    return at >= sinceMillis
        && at < untilMillis
        && (at < beforeDeadAtMillis || (at == beforeDeadAtMillis && d.id() < beforeId));
  }
}
