package dev.idem.kafka;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Reservation;
import dev.idem.Settlement;
import dev.idem.TimeSource;
import dev.idem.kafka.internal.PartitionSettler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a Kafka {@link Consumer}'s poll loop so that each record's work runs once per dedup key, for
 * applications that use the plain Kafka client (not the Idem service):
 *
 * <pre>{@code
 * consumer.subscribe(List.of("orders"));          // enable.auto.commit=false
 * DedupPollLoop<String, String> loop =
 *     DedupPollLoop.builder(consumer, dedup, RecordKeys.recordKey(), r -> ship(r.value())).build();
 * loop.run(Duration.ofMillis(500));               // until loop.stop()
 * }</pre>
 *
 * <p>Each {@link #pollOnce(Duration)}:
 *
 * <ol>
 *   <li>resumes partitions whose back-off has passed, then polls;
 *   <li>derives every record's key and reserves the whole batch in one store call;
 *   <li>per partition, in offset order: runs the handler for each acquired record, skips each
 *       duplicate, and stops at the first record it cannot settle now: one whose key another worker
 *       holds (in flight) or whose handler failed (with {@link FailureAction#RETRY}). It releases
 *       that record's key and the keys of the records after it, seeks the partition back to it and
 *       pauses the partition for the retry back-off;
 *   <li>commits the keys of the records that succeeded, in one store call;
 *   <li>then commits, per partition, the offset after the last settled record.
 * </ol>
 *
 * <p>Keys are committed before offsets, so a record that comes again because its offset was not
 * committed (a crash, a rebalance, a failed offset commit) is a duplicate and its work does not run
 * again: no record is acted on twice past its dedup key. A record is acted on at least once: if the
 * process dies after the work but before the key commit, the key's lease ends and a redelivery runs
 * the work again. Keep the lease longer than a batch takes.
 *
 * <p>A record whose key cannot be derived is bad input: it is logged and skipped. The consumer must
 * not auto-commit offsets ({@code enable.auto.commit=false}), or offsets could pass records whose
 * work never ran. Not thread-safe: call it from the consumer's thread; {@link #stop()} may be
 * called from any thread.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class DedupPollLoop<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(DedupPollLoop.class);

  private final Consumer<K, V> consumer;
  private final Deduplicator dedup;
  private final PartitionSettler<K, V> settler;
  private volatile boolean stopped;

  private DedupPollLoop(Builder<K, V> b) {
    this.consumer = b.consumer;
    this.dedup = b.dedup;
    this.settler =
        new PartitionSettler<>(
            b.consumer, b.keys, b.handler, b.onFailure, b.backoff.toNanos(), b.time);
  }

  /**
   * Starts a builder.
   *
   * @param consumer a subscribed (or assigned) consumer with {@code enable.auto.commit=false}
   * @param dedup the deduplicator (store, scope, window, lease)
   * @param keys derives a record's key, e.g. {@link RecordKeys#recordKey()}
   * @param handler the work to run once per key
   * @param <K> the record key type
   * @param <V> the record value type
   * @return a builder
   */
  public static <K, V> Builder<K, V> builder(
      Consumer<K, V> consumer,
      Deduplicator dedup,
      Function<ConsumerRecord<K, V>, DedupKey> keys,
      RecordHandler<K, V> handler) {
    return new Builder<>(consumer, dedup, keys, handler);
  }

  /**
   * Polls until {@link #stop()} is called, then returns (the consumer stays open: close it).
   *
   * @param pollTimeout how long one poll waits for records
   * @throws dev.idem.StoreUnavailableException if the store did not answer (the loop ends; the
   *     records of the failed batch come again on the next poll)
   */
  public void run(Duration pollTimeout) {
    try {
      while (!stopped) {
        pollOnce(pollTimeout);
      }
    } catch (WakeupException e) {
      if (!stopped) {
        throw e;
      }
    }
  }

  /** Makes {@link #run(Duration)} return after the current batch. Thread-safe. */
  public void stop() {
    stopped = true;
    consumer.wakeup();
  }

  /**
   * Polls once and settles the batch, as the class description says.
   *
   * @param pollTimeout how long the poll waits for records
   * @return what happened to the batch's records
   * @throws dev.idem.StoreUnavailableException if the store did not answer; no offset of the batch
   *     is committed and its partitions are sought back, so its records come again
   */
  public PollSummary pollOnce(Duration pollTimeout) {
    settler.resumeDue(tp -> true);
    ConsumerRecords<K, V> records = consumer.poll(pollTimeout);
    if (records.isEmpty()) {
      settler.commitOffsets(Map.of()); // what a rebalance refused before
      return new PollSummary(0, 0, 0, 0);
    }
    Map<TopicPartition, PartitionSettler.Items<K, V>> byPartition = new LinkedHashMap<>();
    List<DedupKey> toReserve = new ArrayList<>(records.count());
    for (TopicPartition tp : records.partitions()) {
      PartitionSettler.Items<K, V> items = settler.derive(records.records(tp));
      byPartition.put(tp, items);
      toReserve.addAll(items.toReserve());
    }
    List<Decision> decisions = dedup.reserveAll(toReserve); // the whole poll in one store call
    int from = 0;
    for (PartitionSettler.Items<K, V> items : byPartition.values()) {
      int n = items.keyCount();
      items.decided(decisions.subList(from, from + n));
      from += n;
    }
    PartitionSettler.Tally tally = new PartitionSettler.Tally();
    List<Reservation> done = new ArrayList<>();
    Set<DedupKey> succeeded = new HashSet<>();
    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
    byPartition.forEach((tp, items) -> settler.settle(tp, items, succeeded, done, offsets, tally));
    commitKeys(done, records);
    settler.commitOffsets(offsets);
    return new PollSummary(tally.processed, tally.duplicates, tally.deferred, tally.skipped);
  }

  private void commitKeys(List<Reservation> done, ConsumerRecords<K, V> records) {
    if (done.isEmpty()) {
      return;
    }
    List<Settlement> settled;
    try {
      settled = dedup.commitAll(done);
    } catch (RuntimeException e) {
      // Nothing of this batch is committed: read it again. Its keys stay in flight until their
      // lease ends, then the redelivered records run (at least once).
      for (TopicPartition tp : records.partitions()) {
        consumer.seek(tp, records.records(tp).get(0).offset());
      }
      throw e;
    }
    PartitionSettler.warnLeaseLost(done, settled);
  }

  /**
   * What one {@link #pollOnce(Duration)} did.
   *
   * @param processed records whose work ran and whose key was committed
   * @param duplicates records skipped because their key was committed
   * @param deferred partitions stopped at a record to retry later (in flight elsewhere, or failed)
   * @param skipped records skipped after a failure ({@link FailureAction#SKIP}) or with no key
   */
  public record PollSummary(int processed, int duplicates, int deferred, int skipped) {}

  /**
   * The work to run once per key.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  @FunctionalInterface
  public interface RecordHandler<K, V> {
    /**
     * Handles one record; an exception releases its key.
     *
     * @param record the record
     * @throws Exception if the work failed
     */
    void handle(ConsumerRecord<K, V> record) throws Exception;
  }

  /** What to do with a record whose work failed (its key is released either way). */
  public enum FailureAction {
    /** Seek back to it and try again after the back-off; later records of its partition wait. */
    RETRY,
    /** Move past it (its offset is committed): the handler has dead-lettered or dropped it. */
    SKIP
  }

  /**
   * Decides what a failure means.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  @FunctionalInterface
  public interface FailureHandler<K, V> {
    /**
     * Called once per failed attempt.
     *
     * @param record the record
     * @param failure what the handler threw
     * @return retry or skip
     */
    FailureAction onFailure(ConsumerRecord<K, V> record, Exception failure);
  }

  /**
   * Builds a {@link DedupPollLoop}. Not thread-safe.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  public static final class Builder<K, V> {
    private final Consumer<K, V> consumer;
    private final Deduplicator dedup;
    private final Function<ConsumerRecord<K, V>, DedupKey> keys;
    private final RecordHandler<K, V> handler;
    private FailureHandler<K, V> onFailure =
        (record, e) -> {
          LOG.warn("record {} failed; retrying it", RecordKeys.where(record), e);
          return FailureAction.RETRY;
        };
    private Duration backoff = Duration.ofMillis(500);
    private TimeSource time = TimeSource.system();

    private Builder(
        Consumer<K, V> consumer,
        Deduplicator dedup,
        Function<ConsumerRecord<K, V>, DedupKey> keys,
        RecordHandler<K, V> handler) {
      this.consumer = Objects.requireNonNull(consumer, "consumer");
      this.dedup = Objects.requireNonNull(dedup, "dedup");
      this.keys = Objects.requireNonNull(keys, "keys");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /**
     * Sets what a failed record means (default: log it and retry it after the back-off).
     *
     * @param onFailure the decision
     * @return this builder
     */
    public Builder<K, V> onFailure(FailureHandler<K, V> onFailure) {
      this.onFailure = Objects.requireNonNull(onFailure, "onFailure");
      return this;
    }

    /**
     * Sets how long a partition waits before a deferred record is tried again (default 500 ms).
     *
     * @param backoff the back-off, zero or more
     * @return this builder
     */
    public Builder<K, V> retryBackoff(Duration backoff) {
      if (backoff.isNegative()) {
        throw new IllegalArgumentException("retryBackoff must be zero or more, got " + backoff);
      }
      this.backoff = backoff;
      return this;
    }

    /**
     * Sets the clock for back-offs (tests use {@link dev.idem.ManualTimeSource}).
     *
     * @param time the time source
     * @return this builder
     */
    public Builder<K, V> timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Returns the loop.
     *
     * @return a new loop over the consumer
     */
    public DedupPollLoop<K, V> build() {
      return new DedupPollLoop<>(this);
    }
  }
}
