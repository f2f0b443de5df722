package dev.idem.spi;

import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A transactional outbox kept by a store next to its keys, for asynchronous delivery: a service
 * answers a sender only after {@link #commitAndEnqueue} made the key's commit and the message
 * durable together, then delivers from the outbox with retries.
 *
 * <p>Delivery is at least once: a claimed entry that is neither acknowledged, rescheduled nor dead
 * lettered before its claim runs out (its deliverer crashed) is handed out again. Downstream
 * deduplicates with the {@code Idempotency-Key} it receives.
 *
 * <p><b>Ordering keys (the per-key mailbox).</b> Entries whose {@link OutboxMessage#orderingKey()}
 * is the same (within one queue) are handed out one at a time, in append order: a claim hands out
 * an entry with an ordering key only if it is the oldest entry of its key still in the queue (the
 * key's <em>head</em>), and never while another entry of its key is claimed and its claim runs. The
 * head leaves only when it is settled ({@link #acknowledge acknowledged} or {@link #deadLetter dead
 * lettered}); while it waits for a retry ({@link #reschedule}) or its claim runs, the key's later
 * entries wait too (a poison entry blocks its own key until it is dead lettered, and no other key).
 * A head whose claim ran out (its deliverer died) is handed out again, so the next deliverer, on
 * any instance, picks the key up where it stopped. Entries without an ordering key are never held
 * back. This holds across restarts and across instances sharing the store, because the store
 * decides it.
 *
 * <p><b>Fencing.</b> {@link OutboxRecord#attempts()} counts the claims of an entry, so it also
 * names the claim: the forms of {@link #acknowledge(OutboxRecord)}, {@link
 * #reschedule(OutboxRecord, long, String)} and {@link #deadLetter(OutboxRecord, String, long)} that
 * take the claimed record apply only if the entry was not claimed again since (its attempts are
 * still the record's). A deliverer whose claim ran out and whose entry another deliverer took over
 * changes nothing with its late answer. Deliverers use these forms; the forms that take an id apply
 * unconditionally (for operators and tools).
 *
 * <p><b>Arguments.</b> Every store answers bad numbers alike: {@link #claim} with {@code max < 1}
 * or {@code claimMillis < 1}, and {@link #deadLetters}/{@link #pending} with {@code limit < 1},
 * throw {@link IllegalArgumentException}.
 *
 * <p>Thread-safe. Implemented by the durable stores (RocksDB, JDBC, Redis) and, without durability,
 * by the memory store.
 */
public interface OutboxStore {

  /**
   * Commits a reservation and appends messages, in one atomic step: if the commit is {@link
   * SettleResult#STALE}, nothing is appended; if it is applied, every message is appended, in list
   * order (an event a transform fanned out into several deliveries is accepted whole or not at
   * all). A repeated call with the token that already committed (a retry after an unknown outcome)
   * answers {@link SettleResult#APPLIED} and appends nothing, so messages are never enqueued twice
   * for one commit.
   *
   * @param commit the commit, as for {@link DedupStore#commit}
   * @param messages the messages to append, at least one; they may name different queues
   * @return whether the commit (and so the append) was applied
   * @throws IllegalArgumentException if {@code messages} is empty
   */
  SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages);

  /**
   * Commits a reservation and appends one message, in one atomic step; see {@link
   * #commitAndEnqueue(CommitRequest, List)}.
   *
   * @param commit the commit, as for {@link DedupStore#commit}
   * @param message the message to append
   * @return whether the commit (and so the append) was applied
   */
  default SettleResult commitAndEnqueue(CommitRequest commit, OutboxMessage message) {
    return commitAndEnqueue(commit, List.of(message));
  }

  /**
   * Claims up to {@code max} deliverable entries of one queue, oldest first: entries not claimed by
   * anyone (or whose claim ran out) and not scheduled for later ({@code notBefore <= nowMillis}),
   * and, for an entry with an ordering key, only the head of its key (see the class comment). A
   * claimed entry is hidden from other claims until {@code nowMillis + claimMillis} (visible again
   * at exactly that time). Each claim adds one to the entry's attempts.
   *
   * @param queue the queue
   * @param max the most entries to return, at least 1
   * @param nowMillis the caller's wall-clock time
   * @param claimMillis how long the claim hides the entries, at least 1
   * @return the claimed entries in append order (empty if none)
   * @throws IllegalArgumentException if {@code max} or {@code claimMillis} is less than 1
   */
  List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis);

  /**
   * Makes the entries of a queue that an earlier run of the process claimed claimable at once, so
   * that what a killed process had claimed is delivered right after a restart rather than when its
   * claims run out. A dispatcher calls it once when it starts, before it claims from the queue.
   *
   * <p>A store that only one process can open at a time (an embedded store) knows that every claim
   * it finds then was made by an earlier process, which is gone, and releases them all; scheduled
   * retries ({@link #reschedule}) keep their time. A store whose outbox dies with the process has
   * no earlier claims and releases none (the default). A store shared by several live processes
   * cannot tell an earlier run's claims from a live instance's by itself: it releases only the
   * claims recorded under its own instance identity by another run of it (when it is given one; see
   * the store's documentation), and other claims come back when they run out.
   *
   * @param queue the queue
   * @return how many entries were released
   */
  default long releaseClaimsOfEarlierRuns(String queue) {
    return 0;
  }

  /**
   * Removes a delivered entry, unconditionally (for operators and tools; a deliverer uses {@link
   * #acknowledge(OutboxRecord)}). If the entry was the head of its ordering key, the key's next
   * entry becomes the head.
   *
   * @param queue the queue
   * @param id the entry's id
   * @return whether it was there
   */
  boolean acknowledge(String queue, long id);

  /**
   * Removes a delivered entry if it was not claimed again since {@code claimed} was handed out (its
   * attempts are still {@code claimed.attempts()}); otherwise changes nothing. If the entry was the
   * head of its ordering key, the key's next entry becomes the head.
   *
   * @param claimed the entry as {@link #claim} handed it out
   * @return whether the entry was removed (false: it is gone, or another claim took it over)
   */
  boolean acknowledge(OutboxRecord claimed);

  /**
   * Makes a claimed entry deliverable again, not before {@code notBeforeMillis}, recording the
   * error of the failed attempt. Does nothing if the entry is gone (acknowledged or dead lettered
   * by another deliverer whose claim overlapped).
   *
   * @param queue the queue
   * @param id the entry's id
   * @param notBeforeMillis the earliest time to claim it again
   * @param error what went wrong
   */
  void reschedule(String queue, long id, long notBeforeMillis, String error);

  /**
   * Makes a claimed entry deliverable again, not before {@code notBeforeMillis}, recording the
   * error, if it was not claimed again since {@code claimed} was handed out; otherwise changes
   * nothing. An entry with an ordering key stays its key's head: the key waits for its retry.
   *
   * @param claimed the entry as {@link #claim} handed it out
   * @param notBeforeMillis the earliest time to claim it again
   * @param error what went wrong
   * @return whether the entry was rescheduled (false: it is gone, or another claim took it over)
   */
  boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error);

  /**
   * Moves an entry from the outbox to the dead letters, atomically. Does nothing if the entry is
   * gone.
   *
   * @param queue the queue
   * @param id the entry's id
   * @param reason the last error
   * @param nowMillis the caller's wall-clock time
   */
  void deadLetter(String queue, long id, String reason, long nowMillis);

  /**
   * Moves an entry from the outbox to the dead letters, atomically, if it was not claimed again
   * since {@code claimed} was handed out; otherwise changes nothing. If the entry was the head of
   * its ordering key, the key's next entry becomes the head (the key moves on).
   *
   * @param claimed the entry as {@link #claim} handed it out
   * @param reason the last error
   * @param nowMillis the caller's wall-clock time
   * @return whether the entry was dead lettered (false: it is gone, or another claim took it over)
   */
  boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis);

  /**
   * Lists dead letters of one queue, oldest first.
   *
   * @param queue the queue
   * @param limit the most to return, at least 1
   * @return the dead letters
   * @throws IllegalArgumentException if {@code limit} is less than 1
   */
  List<DeadLetter> deadLetters(String queue, int limit);

  /**
   * Lists dead letters of one queue, newest first, in a time range, one page at a time; see {@link
   * DeadLetterQuery}.
   *
   * @param queue the queue
   * @param query the range, the page's position and its size
   * @return the dead letters in {@link DeadLetterQuery#NEWEST_FIRST} order (empty if none)
   */
  List<DeadLetter> deadLetters(String queue, DeadLetterQuery query);

  /**
   * Reads one dead letter.
   *
   * @param queue the queue
   * @param id the dead letter's id (the outbox id it had)
   * @return the dead letter, or empty if the queue has none with that id (never was, requeued or
   *     purged)
   */
  Optional<DeadLetter> findDeadLetter(String queue, long id);

  /**
   * Moves a dead letter back into the outbox, atomically, for another round of deliveries: an
   * operator fixed what made it fail. The new entry has the same key and payload (so downstream
   * gets the same {@code Idempotency-Key}), no attempts, no last error, is due at once, and is
   * appended at the end of the queue under a new id, enqueued at {@code nowMillis}. The event's
   * dedup key is not touched: it stays committed, so the requeue bypasses deduplication, and
   * senders' retries of the event stay duplicates.
   *
   * @param queue the queue
   * @param id the dead letter's id
   * @param nowMillis the caller's wall-clock time
   * @return the new outbox entry's id, or empty if the queue has no dead letter with that id
   */
  OptionalLong requeueDeadLetter(String queue, long id, long nowMillis);

  /**
   * Deletes one dead letter for good.
   *
   * @param queue the queue
   * @param id the dead letter's id
   * @return whether it was there
   */
  boolean purgeDeadLetter(String queue, long id);

  /**
   * Deletes every dead letter of one queue for good; other queues keep theirs.
   *
   * @param queue the queue
   * @return how many were deleted
   */
  long purgeDeadLetters(String queue);

  /**
   * Lists entries still waiting in one queue (claimed or not), oldest first, with their attempts,
   * their next possible attempt and their last error: what an operator looks at while deliveries
   * fail. Read-only: it claims nothing and changes nothing.
   *
   * @param queue the queue
   * @param limit the most to return, at least 1
   * @return the entries in append order (empty if none)
   * @throws IllegalArgumentException if {@code limit} is less than 1
   */
  List<PendingEntry> pending(String queue, int limit);

  /**
   * Counts entries waiting in one queue (claimed or not), for the outbox-depth metric.
   *
   * @param queue the queue
   * @return the number of entries not yet acknowledged or dead lettered
   */
  long depth(String queue);
}
