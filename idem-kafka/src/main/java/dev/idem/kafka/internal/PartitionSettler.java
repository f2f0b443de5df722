package dev.idem.kafka.internal;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.Reservation;
import dev.idem.Settlement;
import dev.idem.TimeSource;
import dev.idem.kafka.DedupPollLoop.FailureAction;
import dev.idem.kafka.DedupPollLoop.FailureHandler;
import dev.idem.kafka.DedupPollLoop.RecordHandler;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Not API: the part of a poll loop that {@link dev.idem.kafka.DedupPollLoop} and {@link
 * dev.idem.kafka.state.PartitionedDedupLoop} share, what happens to one partition's records once
 * their keys are reserved. The loops differ only in where the keys live (one store, or the
 * partition's own state) and what makes a batch durable (the key commit, or also the changelog
 * flush). Not thread-safe: the consumer's thread.
 *
 * <ol>
 *   <li>{@link #derive} turns records into items with their keys (a record without one is skipped
 *       later, logged); the loop reserves {@link Items#toReserve()} and hands the decisions back
 *       ({@link Items#decided});
 *   <li>{@link #settle} walks a partition's items in offset order: runs the handler for each
 *       acquired one, skips duplicates, and stops at the first it cannot settle now (in flight
 *       elsewhere, or failed with {@link FailureAction#RETRY}): releases its key and those after
 *       it, seeks back to it and pauses the partition for the back-off;
 *   <li>{@link #resumeDue} resumes paused partitions whose back-off passed; {@link #commitOffsets}
 *       commits what was settled (and what a rebalance in progress refused before).
 * </ol>
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class PartitionSettler<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(PartitionSettler.class);

  private final Consumer<K, V> consumer;
  private final Function<ConsumerRecord<K, V>, DedupKey> keys;
  private final RecordHandler<K, V> handler;
  private final FailureHandler<K, V> onFailure;
  private final long backoffNanos;
  private final TimeSource time;
  private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
  private final Map<TopicPartition, OffsetAndMetadata> refused = new HashMap<>();

  /**
   * Makes the shared part of a loop.
   *
   * @param consumer the loop's consumer
   * @param keys derives a record's key
   * @param handler the work to run once per key
   * @param onFailure what a failed record means
   * @param backoffNanos how long a partition waits before a deferred record is tried again
   * @param time the clock of back-offs
   */
  public PartitionSettler(
      Consumer<K, V> consumer,
      Function<ConsumerRecord<K, V>, DedupKey> keys,
      RecordHandler<K, V> handler,
      FailureHandler<K, V> onFailure,
      long backoffNanos,
      TimeSource time) {
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.keys = Objects.requireNonNull(keys, "keys");
    this.handler = Objects.requireNonNull(handler, "handler");
    this.onFailure = Objects.requireNonNull(onFailure, "onFailure");
    this.backoffNanos = backoffNanos;
    this.time = Objects.requireNonNull(time, "time");
  }

  /** What a partition's settle did, added up over a poll. */
  public static final class Tally {
    /** Records whose work ran (their keys are in {@code done}). */
    public int processed;

    /** Records skipped because their key was committed. */
    public int duplicates;

    /** Partitions stopped at a record to retry later. */
    public int deferred;

    /** Records skipped after a failure or without a key. */
    public int skipped;

    /** Starts at zero. */
    public Tally() {}
  }

  /**
   * One partition's records of a poll, with their keys and, once reserved, their decisions.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  public static final class Items<K, V> {
    private final List<Item<K, V>> all;
    private final List<Item<K, V>> keyed;

    private Items(List<Item<K, V>> all, List<Item<K, V>> keyed) {
      this.all = all;
      this.keyed = keyed;
    }

    /**
     * Returns the keys to reserve, in offset order (records without a key are left out).
     *
     * @return the keys
     */
    public List<DedupKey> toReserve() {
      List<DedupKey> out = new ArrayList<>(keyed.size());
      for (Item<K, V> i : keyed) {
        out.add(Objects.requireNonNull(i.key));
      }
      return out;
    }

    /**
     * Returns how many keys there are to reserve.
     *
     * @return the size of {@link #toReserve()}
     */
    public int keyCount() {
      return keyed.size();
    }

    /**
     * Takes the decisions of {@link #toReserve()}, in the same order.
     *
     * @param decisions one per key
     */
    public void decided(List<Decision> decisions) {
      if (decisions.size() != keyed.size()) {
        throw new IllegalArgumentException(
            decisions.size() + " decisions for " + keyed.size() + " keys");
      }
      for (int i = 0; i < decisions.size(); i++) {
        keyed.get(i).decision = decisions.get(i);
      }
    }
  }

  private static final class Item<K, V> {
    final ConsumerRecord<K, V> record;
    @Nullable DedupKey key;
    @Nullable Decision decision;
    @Nullable KeyDerivationException invalid;

    Item(ConsumerRecord<K, V> record) {
      this.record = record;
    }
  }

  private enum Outcome {
    DONE,
    DUPLICATE,
    SKIPPED,
    DEFER
  }

  /**
   * Derives the keys of one partition's records.
   *
   * @param records the records, in offset order
   * @return the items, to reserve and then {@link #settle}
   */
  public Items<K, V> derive(List<ConsumerRecord<K, V>> records) {
    List<Item<K, V>> all = new ArrayList<>(records.size());
    List<Item<K, V>> keyed = new ArrayList<>(records.size());
    for (ConsumerRecord<K, V> record : records) {
      Item<K, V> item = new Item<>(record);
      try {
        item.key = keys.apply(record);
        keyed.add(item);
      } catch (KeyDerivationException e) {
        item.invalid = e;
      }
      all.add(item);
    }
    return new Items<>(all, keyed);
  }

  /**
   * Settles one partition's reserved items in offset order (step 2 of the class description).
   *
   * @param tp the partition
   * @param items its items, decided
   * @param succeeded keys whose work ran in this poll so far (a later record with one is a
   *     duplicate); added to
   * @param done the reservations of the records whose work ran; added to, to commit
   * @param offsets the offset after the last settled record per partition; set for {@code tp}
   * @param tally added to
   */
  public void settle(
      TopicPartition tp,
      Items<K, V> items,
      Set<DedupKey> succeeded,
      List<Reservation> done,
      Map<TopicPartition, OffsetAndMetadata> offsets,
      Tally tally) {
    List<Item<K, V>> all = items.all;
    for (int i = 0; i < all.size(); i++) {
      Item<K, V> item = all.get(i);
      Outcome outcome = settleOne(item, succeeded);
      if (outcome == Outcome.DEFER) {
        tally.deferred++;
        defer(tp, item.record.offset(), all.subList(i + 1, all.size()));
        return;
      }
      switch (outcome) {
        case DONE -> {
          tally.processed++;
          done.add(((Decision.Acquired) Objects.requireNonNull(item.decision)).reservation());
          succeeded.add(Objects.requireNonNull(item.key));
        }
        case DUPLICATE -> tally.duplicates++;
        default -> tally.skipped++;
      }
      offsets.put(tp, new OffsetAndMetadata(item.record.offset() + 1));
    }
  }

  private Outcome settleOne(Item<K, V> item, Set<DedupKey> succeeded) {
    if (item.invalid != null) {
      LOG.warn("record {} skipped: {}", where(item.record), item.invalid.getMessage());
      return Outcome.SKIPPED;
    }
    Decision decision = Objects.requireNonNull(item.decision);
    if (decision instanceof Decision.InFlight) {
      // Held by an earlier record of this batch: a duplicate if that one succeeded.
      return succeeded.contains(item.key) ? Outcome.DUPLICATE : Outcome.DEFER;
    }
    if (!(decision instanceof Decision.Acquired acquired)) {
      return Outcome.DUPLICATE; // committed (a conflict needs a fingerprint, never passed here)
    }
    try {
      handler.handle(item.record);
      return Outcome.DONE;
    } catch (Exception e) {
      releaseQuietly(acquired.reservation());
      FailureAction action = onFailure.onFailure(item.record, e);
      return action == FailureAction.SKIP ? Outcome.SKIPPED : Outcome.DEFER;
    }
  }

  private void defer(TopicPartition tp, long offset, List<Item<K, V>> unprocessed) {
    for (Item<K, V> later : unprocessed) {
      if (later.decision instanceof Decision.Acquired a) {
        releaseQuietly(a.reservation());
      }
    }
    consumer.seek(tp, offset);
    consumer.pause(List.of(tp));
    pausedUntil.put(tp, time.monotonicNanos() + backoffNanos);
  }

  /**
   * Resumes the partitions this settler paused whose back-off has passed.
   *
   * @param mayResume whether a due partition may be resumed now (e.g. not while it is restored)
   */
  public void resumeDue(Predicate<TopicPartition> mayResume) {
    if (pausedUntil.isEmpty()) {
      return;
    }
    pausedUntil.keySet().retainAll(consumer.assignment());
    long now = time.monotonicNanos();
    List<TopicPartition> due = new ArrayList<>();
    pausedUntil.forEach(
        (tp, until) -> {
          if (now - until >= 0 && mayResume.test(tp)) {
            due.add(tp);
          }
        });
    if (!due.isEmpty()) {
      due.forEach(pausedUntil::remove);
      consumer.resume(due);
    }
  }

  /**
   * Forgets the back-off of a partition that left this consumer.
   *
   * @param tp the partition
   */
  public void forget(TopicPartition tp) {
    pausedUntil.remove(tp);
    refused.remove(tp);
  }

  /**
   * For {@code onPartitionsRevoked}, where the consumer still owns the partitions: commits the
   * offsets a rebalance refused before for the partitions being revoked, so that their next owner
   * starts after the records settled here instead of reading them again, then forgets the
   * partitions. A commit that fails is logged and dropped: the records come again, and their keys
   * are committed, so they are duplicates.
   *
   * @param partitions the partitions being revoked
   */
  public void commitRevoked(Collection<TopicPartition> partitions) {
    Map<TopicPartition, OffsetAndMetadata> leaving = new HashMap<>();
    for (TopicPartition tp : partitions) {
      OffsetAndMetadata o = refused.get(tp);
      if (o != null) {
        leaving.put(tp, o);
      }
    }
    try {
      if (!leaving.isEmpty()) {
        consumer.commitSync(leaving);
        LOG.debug("committed offsets {} of revoked partitions", leaving);
      }
    } catch (WakeupException | InterruptException e) {
      throw e; // stop() or an interrupt: the caller's poll ends with it
    } catch (KafkaException e) {
      LOG.info(
          "offsets {} of revoked partitions not committed ({}); their records come again as"
              + " duplicates",
          leaving,
          e.toString());
    } finally {
      partitions.forEach(this::forget);
    }
  }

  /**
   * Logs the reservations whose key commit changed nothing (their work outlasted the lease).
   *
   * @param done the committed reservations
   * @param settled their settlements, in order
   */
  public static void warnLeaseLost(List<Reservation> done, List<Settlement> settled) {
    for (int i = 0; i < settled.size(); i++) {
      if (settled.get(i) == Settlement.LEASE_LOST) {
        LOG.warn(
            "{}: a record's work outlasted its lease; its key commit changed nothing (another"
                + " worker may have taken it over). Raise the lease above a batch's duration.",
            done.get(i));
      }
    }
  }

  /**
   * Commits the settled offsets, with those a rebalance refused before. A commit refused because a
   * rebalance is in progress (with the cooperative assignor the consumer keeps its partitions and
   * polls on meanwhile) is kept and sent again with the next call, for the partitions still
   * assigned; a commit refused because the partitions were lost is dropped (their records come
   * again, and their keys are committed, so they are duplicates).
   *
   * @param offsets the offsets, or none to send only what was refused before
   */
  public void commitOffsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
    if (!refused.isEmpty()) {
      refused.keySet().retainAll(consumer.assignment());
    }
    if (offsets.isEmpty() && refused.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> all = new HashMap<>(refused);
    all.putAll(offsets); // a later batch is further on
    try {
      consumer.commitSync(all);
      refused.clear();
    } catch (RebalanceInProgressException e) {
      refused.putAll(all);
      LOG.debug("offsets {} not committed during a rebalance; sent again after it", all);
    } catch (CommitFailedException e) {
      refused.clear();
      LOG.info(
          "offsets not committed ({}); their keys are committed, so their records come again as"
              + " duplicates",
          e.toString());
    }
  }

  private static void releaseQuietly(Reservation r) {
    try {
      if (r.settlement() == null) {
        r.release();
      }
    } catch (RuntimeException e) {
      LOG.warn("{}: could not release; it stays in flight until its lease ends", r, e);
    }
  }

  /**
   * Names a record in logs.
   *
   * @param record the record
   * @return {@code topic-partition@offset}
   */
  public static String where(ConsumerRecord<?, ?> record) {
    return record.topic() + "-" + record.partition() + "@" + record.offset();
  }
}
