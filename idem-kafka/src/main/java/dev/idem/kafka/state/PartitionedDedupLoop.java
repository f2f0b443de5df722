package dev.idem.kafka.state;

import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Reservation;
import dev.idem.TimeSource;
import dev.idem.kafka.DedupPollLoop.FailureAction;
import dev.idem.kafka.DedupPollLoop.FailureHandler;
import dev.idem.kafka.DedupPollLoop.PollSummary;
import dev.idem.kafka.DedupPollLoop.RecordHandler;
import dev.idem.kafka.internal.PartitionSettler;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The poll loop of {@link dev.idem.kafka.DedupPollLoop} on Kafka-partitioned state: each record is
 * deduplicated against the state of its own partition, held by this consumer ({@link
 * PartitionedDedupState}), so no shared store is needed.
 *
 * <pre>{@code
 * try (PartitionedDedupState state = PartitionedDedupState.open(
 *         PartitionedStateConfig.builder("orders", Path.of("/var/lib/app/idem"), clients).build())) {
 *   PartitionedDedupLoop<String, String> loop = PartitionedDedupLoop.builder(
 *           consumer, state, store -> Deduplicator.builder(store, Scope.of("orders")).build(),
 *           RecordKeys.recordKey(), r -> ship(r.value()))
 *       .build();
 *   loop.subscribe();                       // the input topic, with the state's rebalance listener
 *   loop.run(Duration.ofMillis(500));       // until loop.stop()
 * }
 * }</pre>
 *
 * <p>Each {@link #pollOnce(Duration)}: restores newly assigned partitions for a slice of time (they
 * stay paused until restored); resumes partitions whose back-off has passed; polls; per partition
 * reserves the batch's keys, runs the handler for each acquired record in offset order, skips
 * duplicates, and stops at the first record it cannot settle now (seeks back to it, pauses the
 * partition for the back-off); commits the succeeded keys; <b>flushes the changelog</b>; then
 * commits the offsets after the settled records. So a committed offset is never ahead of the
 * changelog: a record that comes again after a crash or a rebalance finds its key in the restored
 * state and is skipped. A record is acted on at least once: work done whose key commit did not
 * reach the changelog before a crash runs again.
 *
 * <p>Not thread-safe: call it from the consumer's thread; {@link #stop()} may be called from any
 * thread.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class PartitionedDedupLoop<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(PartitionedDedupLoop.class);

  private final Consumer<K, V> consumer;
  private final PartitionedDedupState state;
  private final Function<DedupStore, Deduplicator> dedups;
  private final PartitionSettler<K, V> settler;
  private final long sweepNanos;
  private final Duration restoreSlice;
  private final TimeSource time;
  private final Map<Integer, Deduplicator> byPartition = new HashMap<>();
  private long nextSweep;
  private volatile boolean stopped;

  private PartitionedDedupLoop(Builder<K, V> b) {
    this.consumer = b.consumer;
    this.state = b.state;
    this.dedups = b.dedups;
    this.settler =
        new PartitionSettler<>(
            b.consumer, b.keys, b.handler, b.onFailure, b.backoff.toNanos(), b.time);
    this.sweepNanos = b.sweepInterval.toNanos();
    this.restoreSlice = b.restoreSlice;
    this.time = b.time;
    this.nextSweep = time.monotonicNanos() + sweepNanos;
  }

  /**
   * Starts a builder.
   *
   * @param consumer a consumer with {@code enable.auto.commit=false}, not yet subscribed
   * @param state the partitioned state of the consumer's input topic
   * @param dedups makes the deduplicator (scope, window, lease) over one partition's store, e.g.
   *     {@code store -> Deduplicator.builder(store, Scope.of("orders")).build()}
   * @param keys derives a record's key; keys must be partitioned like the topic
   * @param handler the work to run once per key
   * @param <K> the record key type
   * @param <V> the record value type
   * @return a builder
   */
  public static <K, V> Builder<K, V> builder(
      Consumer<K, V> consumer,
      PartitionedDedupState state,
      Function<DedupStore, Deduplicator> dedups,
      Function<ConsumerRecord<K, V>, DedupKey> keys,
      RecordHandler<K, V> handler) {
    return new Builder<>(consumer, state, dedups, keys, handler);
  }

  /**
   * Subscribes the consumer to the state's input topic with the state's rebalance listener.
   *
   * @return this loop
   */
  public PartitionedDedupLoop<K, V> subscribe() {
    consumer.subscribe(List.of(state.config().inputTopic()), rebalanceListener());
    return this;
  }

  /**
   * Returns the listener to subscribe with, if you subscribe yourself: the state's listener, which
   * also commits the offsets a pending rebalance refused for partitions being revoked (so that
   * their next owner does not read those records again) and forgets the loop's per-partition
   * back-offs.
   *
   * @return the listener
   */
  public ConsumerRebalanceListener rebalanceListener() {
    ConsumerRebalanceListener inner = state.rebalanceListener(consumer);
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
        settler.commitRevoked(partitions); // what a pending rebalance refused, before they go
        forget(partitions);
        inner.onPartitionsRevoked(partitions);
      }

      @Override
      public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
        forget(partitions);
        inner.onPartitionsLost(partitions);
      }

      @Override
      public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
        inner.onPartitionsAssigned(partitions);
      }
    };
  }

  /**
   * Polls until {@link #stop()} is called, then returns (the consumer and state stay open).
   *
   * @param pollTimeout how long one poll waits for records
   * @throws dev.idem.StoreUnavailableException if the changelog or local state failed (the loop
   *     ends; the failed batch's records come again)
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
   * Restores for a slice, polls once and settles the batch, as the class description says.
   *
   * @param pollTimeout how long the poll waits for records
   * @return what happened to the batch's records
   * @throws dev.idem.StoreUnavailableException if the changelog did not take the batch's changes;
   *     no offset of the batch is committed and its partitions are sought back
   */
  public PollSummary pollOnce(Duration pollTimeout) {
    if (state.isRestoring()) {
      state.restoreSome(consumer, restoreSlice);
    }
    settler.resumeDue(tp -> !state.isRestoring(tp));
    sweepDue();
    ConsumerRecords<K, V> records = consumer.poll(pollTimeout);
    if (records.isEmpty()) {
      settler.commitOffsets(Map.of()); // what a rebalance refused before
      return new PollSummary(0, 0, 0, 0);
    }
    PartitionSettler.Tally tally = new PartitionSettler.Tally();
    Map<Deduplicator, List<Reservation>> done = new LinkedHashMap<>();
    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
    for (TopicPartition tp : records.partitions()) {
      Deduplicator dedup = dedupFor(tp);
      PartitionSettler.Items<K, V> items = settler.derive(records.records(tp));
      items.decided(dedup.reserveAll(items.toReserve())); // one call per partition's state
      settler.settle(
          tp,
          items,
          new HashSet<>(),
          done.computeIfAbsent(dedup, d -> new ArrayList<>()),
          offsets,
          tally);
    }
    try {
      done.forEach(PartitionedDedupLoop::commitKeys);
      state.flush();
    } catch (RuntimeException e) {
      // Not durable: read the batch again. Its keys' local state is dropped with the partition
      // or overwritten on the retry; the changelog may hold some of them (then they are
      // duplicates on a restore) or not (then they run again: at least once).
      for (TopicPartition tp : records.partitions()) {
        if (consumer.assignment().contains(tp)) {
          consumer.seek(tp, records.records(tp).get(0).offset());
        }
      }
      throw e;
    }
    settler.commitOffsets(offsets);
    return new PollSummary(tally.processed, tally.duplicates, tally.deferred, tally.skipped);
  }

  private Deduplicator dedupFor(TopicPartition tp) {
    DedupStore store = state.store(tp.partition());
    Deduplicator d = byPartition.get(tp.partition());
    if (d == null || d.store() != store) {
      d = Objects.requireNonNull(dedups.apply(store), "dedups returned null");
      byPartition.put(tp.partition(), d);
    }
    return d;
  }

  private void sweepDue() {
    long now = time.monotonicNanos();
    if (now - nextSweep >= 0) {
      nextSweep = now + sweepNanos;
      long n = state.sweepExpired(time.wallMillis());
      if (n > 0) {
        LOG.debug("swept {} expired keys", n);
      }
    }
  }

  private void forget(java.util.Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      settler.forget(tp);
      byPartition.remove(tp.partition());
    }
  }

  private static void commitKeys(Deduplicator dedup, List<Reservation> done) {
    if (!done.isEmpty()) {
      PartitionSettler.warnLeaseLost(done, dedup.commitAll(done));
    }
  }

  /**
   * Builds a {@link PartitionedDedupLoop}. Not thread-safe.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  public static final class Builder<K, V> {
    private final Consumer<K, V> consumer;
    private final PartitionedDedupState state;
    private final Function<DedupStore, Deduplicator> dedups;
    private final Function<ConsumerRecord<K, V>, DedupKey> keys;
    private final RecordHandler<K, V> handler;
    private FailureHandler<K, V> onFailure =
        (record, e) -> {
          LOG.warn("record {} failed; retrying it", PartitionSettler.where(record), e);
          return FailureAction.RETRY;
        };
    private Duration backoff = Duration.ofMillis(500);
    private Duration sweepInterval = Duration.ofMinutes(1);
    private Duration restoreSlice = Duration.ofMillis(200);
    private TimeSource time = TimeSource.system();

    private Builder(
        Consumer<K, V> consumer,
        PartitionedDedupState state,
        Function<DedupStore, Deduplicator> dedups,
        Function<ConsumerRecord<K, V>, DedupKey> keys,
        RecordHandler<K, V> handler) {
      this.consumer = Objects.requireNonNull(consumer, "consumer");
      this.state = Objects.requireNonNull(state, "state");
      this.dedups = Objects.requireNonNull(dedups, "dedups");
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
     * @param backoff zero or more
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
     * Sets how often expired keys are removed locally and tombstoned in the changelog (default 1
     * minute).
     *
     * @param interval more than zero
     * @return this builder
     */
    public Builder<K, V> sweepInterval(Duration interval) {
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException("sweepInterval must be positive, got " + interval);
      }
      this.sweepInterval = interval;
      return this;
    }

    /**
     * Sets how long each poll iteration may spend restoring before it polls (default 200 ms); keep
     * it well below {@code max.poll.interval.ms}.
     *
     * @param slice more than zero
     * @return this builder
     */
    public Builder<K, V> restoreSlice(Duration slice) {
      if (slice.isNegative() || slice.isZero()) {
        throw new IllegalArgumentException("restoreSlice must be positive, got " + slice);
      }
      this.restoreSlice = slice;
      return this;
    }

    /**
     * Sets the clock for back-offs and sweeps.
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
     * @return a new loop; call {@link PartitionedDedupLoop#subscribe()} or subscribe with its
     *     {@link PartitionedDedupLoop#rebalanceListener()}
     */
    public PartitionedDedupLoop<K, V> build() {
      return new PartitionedDedupLoop<>(this);
    }
  }
}
