package dev.idem.server.source.kafka;

import dev.idem.DedupKey;
import dev.idem.IdemException;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.kafka.state.PartitionedDedupState;
import dev.idem.kafka.state.PartitionedStateConfig;
import dev.idem.server.config.KafkaSourceSettings;
import dev.idem.server.config.KafkaStateSettings;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code source.kafka.state}: the dedup keys of the partitions this instance owns, in a local
 * RocksDB with a compacted changelog ({@link PartitionedDedupState}), wired into {@link
 * KafkaSource}. The source's consumer thread drives it:
 *
 * <ol>
 *   <li>on assignment, each new partition is paused and its state restored from its changelog
 *       partition ({@link #restoreSome}, between polls), then resumed: no record of a partition is
 *       decided before its keys are back;
 *   <li>each partition's records are decided against that partition's keys ({@link #inPartition});
 *   <li>before offsets are committed, every key change so far is flushed to the changelog ({@link
 *       #flushed}); if that fails, no offset is committed, and every partition is restored again
 *       and read from its committed offset (the last durable point);
 *   <li>on revocation the changes are flushed (after the source's last offset commit) and the
 *       partition's local state dropped; a lost partition is dropped at once.
 * </ol>
 *
 * <p>{@link #store()} is the pipeline's {@link DedupStore}: a reserve goes to the partition the
 * consumer thread is deciding; commit, release and extend (from any thread) go where their
 * reservation was made; the admin API's inspect, forget and clear see every partition this instance
 * owns, and only those. Metrics: {@code idem_kafka_state_restore_seconds} (a timer, one sample per
 * restored partition), {@code idem_kafka_state_restore_records_total} (changelog records read),
 * {@code idem_kafka_state_restoring_partitions}, {@code idem_kafka_state_restore_remaining_records}
 * and {@code idem_kafka_state_changelog_send_errors_total}, tagged with the pipeline. {@code
 * /health} lists the state as a store with {@code "details"} (ready and restoring partitions,
 * offsets left to restore, changelog write errors); it is down while a missed changelog write
 * forces a resync. A zombie owner (paused past its session) is not fenced before it acts: it
 * finishes about one poll, whose offset commit then fails on the generation (see docs/sources.md).
 */
public final class KafkaLocalState implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaLocalState.class);

  /** How long one call between polls reads changelogs at most. */
  static final Duration RESTORE_SLICE = Duration.ofMillis(500);

  /** How often expired keys are removed (each with a tombstone, so compaction shrinks the log). */
  static final Duration SWEEP_EVERY = Duration.ofMinutes(1);

  private final String pipeline;
  private final KafkaSourceSettings settings;
  private final KafkaStateSettings stateSettings;
  private final Routed store = new Routed();
  private final ThreadLocal<@Nullable Integer> deciding = new ThreadLocal<>();
  private final Map<Integer, DedupStore> ready = new ConcurrentHashMap<>();
  private final Map<Long, Integer> partitionOfToken = new ConcurrentHashMap<>();
  private final Timer restoreTime;
  private final Counter restoreRecords;
  private volatile @Nullable PartitionedDedupState state;
  private @Nullable ConsumerRebalanceListener stateListener;
  private volatile boolean resyncNeeded;
  private final TimeSource time;
  private volatile int restoringCount;
  private volatile Map<Integer, Long> restoreRemaining = Map.of();
  private volatile int restoresSeen;
  private long nextSweepNanos;

  /**
   * Makes the state of a source; nothing opens until {@link #open}.
   *
   * @param pipeline the pipeline id
   * @param settings the source's settings, with {@code state}
   * @param registry where the restore meters go
   * @param time the clock (expiry sweeps)
   */
  public KafkaLocalState(
      String pipeline, KafkaSourceSettings settings, MeterRegistry registry, TimeSource time) {
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.time = Objects.requireNonNull(time, "time");
    this.nextSweepNanos = time.monotonicNanos() + SWEEP_EVERY.toNanos();
    this.settings = Objects.requireNonNull(settings, "settings");
    this.stateSettings =
        Objects.requireNonNull(settings.state(), "the source has no state settings");
    this.restoreTime =
        Timer.builder("idem_kafka_state_restore_seconds")
            .description("Time from assignment until a partition's dedup state was restored")
            .tag("pipeline", pipeline)
            .register(registry);
    this.restoreRecords =
        Counter.builder("idem_kafka_state_restore_records")
            .description("Changelog records read while restoring partitions' dedup state")
            .tag("pipeline", pipeline)
            .register(registry);
    Gauge.builder("idem_kafka_state_restoring_partitions", this, s -> s.restoringCount)
        .description("Partitions paused while their dedup state is restored")
        .tag("pipeline", pipeline)
        .register(registry);
    Gauge.builder(
            "idem_kafka_state_restore_remaining_records",
            this,
            s -> s.restoreRemaining.values().stream().mapToLong(Long::longValue).sum())
        .description("Changelog offsets left to read by the restores under way (an upper bound)")
        .tag("pipeline", pipeline)
        .register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(
            "idem_kafka_state_changelog_send_errors",
            this,
            s -> {
              PartitionedDedupState st = s.state;
              return st == null ? 0 : st.changelogSendErrors();
            })
        .description("Key changes the changelog producer could not write (each forces a resync)")
        .tag("pipeline", pipeline)
        .register(registry);
  }

  /**
   * Returns the pipeline's dedup store (see the class comment).
   *
   * @return the store
   */
  public DedupStore store() {
    return store;
  }

  /**
   * Opens the local state: empties the directory, checks or creates the changelog topic.
   *
   * @param clientConfig the Kafka client settings of the source (bootstrap and connection)
   * @throws IdemException if the changelog cannot be checked or the directory used
   */
  void open(Map<String, Object> clientConfig) {
    String topic = settings.topics().get(0);
    try {
      state =
          PartitionedDedupState.open(
              PartitionedStateConfig.builder(topic, stateSettings.dir(), clientConfig)
                  .changelogTopic(Objects.requireNonNull(settings.changelogTopic()))
                  .replicationFactor(stateSettings.replicationFactor())
                  .build());
    } catch (RuntimeException e) {
      throw new IdemException(
          "pipeline "
              + pipeline
              + ": source.kafka.state cannot open ("
              + stateSettings.dir()
              + ", changelog "
              + settings.changelogTopic()
              + "): "
              + e.getMessage(),
          e);
    }
    LOG.info(
        "pipeline={} source.kafka.state in {} with changelog {}",
        pipeline,
        stateSettings.dir(),
        settings.changelogTopic());
  }

  /**
   * Wraps the source's rebalance listener: on revocation the source commits first (flushing the
   * changelog, see {@link #flushed}), then the partitions' state is flushed and dropped; on
   * assignment new partitions are paused and their restore begins, then the source sees them.
   *
   * @param consumer the source's consumer
   * @param source the source's own listener
   * @return the listener to subscribe with
   */
  ConsumerRebalanceListener listener(Consumer<?, ?> consumer, ConsumerRebalanceListener source) {
    ConsumerRebalanceListener inner = open().rebalanceListener(consumer);
    stateListener = inner;
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        try {
          source.onPartitionsRevoked(partitions);
        } finally {
          unready(partitions);
          inner.onPartitionsRevoked(partitions);
          restoringCount = restoringNow();
        }
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        try {
          source.onPartitionsLost(partitions);
        } finally {
          unready(partitions);
          inner.onPartitionsLost(partitions);
          restoringCount = restoringNow();
        }
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        inner.onPartitionsAssigned(partitions);
        restoringCount = restoringNow();
        source.onPartitionsAssigned(partitions);
      }
    };
  }

  /**
   * Between polls: after a failed changelog flush, goes back to the last durable point (see {@link
   * #flushed}); restores for a slice of time, if any partition is being restored, and resumes those
   * that are done; removes expired keys every {@link #SWEEP_EVERY}.
   *
   * @param consumer the source's consumer
   * @param forget makes the source forget its progress on partitions that are read again
   */
  void restoreSome(
      Consumer<?, ?> consumer, java.util.function.Consumer<Collection<TopicPartition>> forget) {
    PartitionedDedupState s = open();
    if (resyncNeeded) {
      resync(consumer, forget);
    }
    long now = time.monotonicNanos();
    if (now - nextSweepNanos >= 0) {
      nextSweepNanos = now + SWEEP_EVERY.toNanos();
      long swept = s.sweepExpired(time.wallMillis());
      if (swept > 0) {
        LOG.debug("pipeline={} source.kafka.state swept {} expired keys", pipeline, swept);
      }
    }
    if (!s.isRestoring()) {
      return;
    }
    List<TopicPartition> done = s.restoreSome(consumer, RESTORE_SLICE);
    for (TopicPartition tp : done) {
      ready.put(tp.partition(), s.store(tp.partition()));
    }
    List<PartitionedDedupState.RestoreStats> all = s.restores();
    for (int i = restoresSeen; i < all.size(); i++) {
      PartitionedDedupState.RestoreStats r = all.get(i);
      restoreTime.record(r.duration());
      restoreRecords.increment(r.records());
      LOG.info(
          "pipeline={} source.kafka.state restored partition {} of {}: {} changelog records, {}"
              + " keys, {} in-flight or expired dropped, in {} ms",
          pipeline,
          r.partition(),
          settings.topics().get(0),
          r.records(),
          r.entries(),
          r.dropped(),
          r.duration().toMillis());
    }
    restoresSeen = all.size();
    restoringCount = restoringNow();
    restoreRemaining = Map.copyOf(s.restoreRemaining());
  }

  /**
   * Decides a partition's records: reserves made by {@code work} on this thread go to that
   * partition's keys.
   *
   * @param tp the partition whose records {@code work} decides
   * @param work the decision (the pipeline's {@code processAll})
   * @param <T> what it returns
   * @return what {@code work} returned
   */
  <T> T inPartition(TopicPartition tp, Supplier<T> work) {
    deciding.set(tp.partition());
    try {
      return work.get();
    } finally {
      deciding.remove();
    }
  }

  /**
   * Waits until every key change so far is in the changelog; call before committing offsets. After
   * a failure it answers false until the next {@link #restoreSome} went back to the last durable
   * point: every assigned partition restored from the changelog and read again from its committed
   * offset (a later flush would succeed and let an offset pass the lost change).
   *
   * @return true if it is, false if a change could not be written (commit no offset then)
   */
  boolean flushed() {
    if (resyncNeeded) {
      return false;
    }
    try {
      open().flush();
      return true;
    } catch (StoreUnavailableException e) {
      // A change is missing from the changelog for good (the producer gave up on it): a later
      // flush would succeed and let offsets pass it. Commit nothing until every partition is
      // rebuilt from the changelog and read again from its committed offset (resync).
      resyncNeeded = true;
      LOG.error(
          "pipeline={} source.kafka.state changelog {} missed a change ({}); no offset is"
              + " committed, and every partition is restored and read again from its committed"
              + " offset",
          pipeline,
          settings.changelogTopic(),
          e.getMessage());
      return false;
    }
  }

  /**
   * Goes back to the last durable point after a failed flush: forgets the source's and the local
   * state of every assigned partition, seeks each to its committed offset, and restores each from
   * the changelog (paused until done), as if it had just been assigned. Records after the committed
   * offsets are decided again: those whose key change reached the changelog are duplicates, the
   * others run again (at least once).
   */
  private void resync(
      Consumer<?, ?> consumer, java.util.function.Consumer<Collection<TopicPartition>> forget) {
    ConsumerRebalanceListener inner = Objects.requireNonNull(stateListener, "not subscribed");
    List<TopicPartition> assigned = new ArrayList<>(consumer.assignment());
    forget.accept(assigned);
    unready(assigned);
    inner.onPartitionsLost(assigned);
    partitionOfToken.clear();
    Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed =
        consumer.committed(new java.util.HashSet<>(assigned));
    for (TopicPartition tp : assigned) {
      var at = committed.get(tp);
      if (at == null) {
        consumer.seekToBeginning(List.of(tp));
      } else {
        consumer.seek(tp, at.offset());
      }
    }
    resyncNeeded = false;
    inner.onPartitionsAssigned(assigned);
    restoringCount = restoringNow();
    LOG.warn("pipeline={} source.kafka.state resynced partitions {}", pipeline, assigned);
  }

  /** Flushes and closes the local state (after the consumer closed). */
  @Override
  public void close() {
    PartitionedDedupState s = state;
    state = null;
    ready.clear();
    partitionOfToken.clear();
    if (s != null) {
      s.close();
    }
  }

  private PartitionedDedupState open() {
    PartitionedDedupState s = state;
    if (s == null) {
      throw new IllegalStateException("pipeline " + pipeline + ": source.kafka.state is not open");
    }
    return s;
  }

  private int restoringNow() {
    PartitionedDedupState s = state;
    if (s == null) {
      return 0;
    }
    restoreRemaining = Map.copyOf(s.restoreRemaining());
    int n = 0;
    for (int p : s.ownedPartitions()) {
      if (!ready.containsKey(p)) {
        n++;
      }
    }
    return n;
  }

  private void unready(Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      ready.remove(tp.partition());
    }
    // Reservations of a dropped partition can no longer be settled: their stores are closed.
    partitionOfToken.values().removeIf(p -> !ready.containsKey(p));
  }

  /** The store of a partition this instance has restored, else unavailable (to retry later). */
  private DedupStore partition(int p) {
    DedupStore s = ready.get(p);
    if (s == null) {
      throw new StoreUnavailableException(
          describe(),
          false,
          "partition "
              + p
              + " of "
              + settings.topics().get(0)
              + " is not owned here (any more) or still being restored");
    }
    return s;
  }

  private String describe() {
    return "kafka-state:" + settings.changelogTopic() + "@" + stateSettings.dir();
  }

  /** What {@code /health} shows of this state; see {@link Routed#healthDetails()}. */
  private Map<String, Object> details() {
    PartitionedDedupState s = state;
    Map<String, Object> d = new java.util.LinkedHashMap<>();
    d.put("changelog", settings.changelogTopic());
    d.put("open", s != null);
    d.put("ready_partitions", new java.util.TreeSet<>(ready.keySet()));
    d.put("restoring_partitions", new java.util.TreeSet<>(restoreRemaining.keySet()));
    d.put(
        "restore_remaining_records",
        restoreRemaining.values().stream().mapToLong(Long::longValue).sum());
    d.put("restored_partitions", restoresSeen);
    d.put("changelog_send_errors", s == null ? 0 : s.changelogSendErrors());
    d.put("resyncing", resyncNeeded);
    return d;
  }

  /** The pipeline's store: routes each operation to one partition's keys. */
  private final class Routed implements DedupStore, dev.idem.server.http.HealthCheck.Details {
    @Override
    public Map<String, Object> healthDetails() {
      return details();
    }

    /** Down while a missed changelog write forces every partition to be rebuilt. */
    @Override
    public void checkHealth() {
      if (resyncNeeded) {
        throw new StoreUnavailableException(
            describe(),
            true,
            "a key change could not be written to the changelog "
                + settings.changelogTopic()
                + "; no offset is committed until every partition is restored again");
      }
    }

    @Override
    public ReserveResult reserve(ReserveRequest request) {
      return reserveAll(List.of(request)).get(0);
    }

    @Override
    public List<ReserveResult> reserveAll(List<ReserveRequest> requests) {
      Integer p = deciding.get();
      if (p == null) {
        throw new IllegalStateException(
            describe()
                + ": a reserve outside the Kafka source's consumer thread (only that source's"
                + " records are deduplicated here)");
      }
      List<ReserveResult> out = partition(p).reserveAll(requests);
      for (ReserveResult r : out) {
        if (r instanceof ReserveResult.Acquired a) {
          partitionOfToken.put(a.token(), p);
        }
      }
      return out;
    }

    @Override
    public SettleResult commit(CommitRequest request) {
      SettleResult r = holder(request.token()).commit(request);
      partitionOfToken.remove(request.token());
      return r;
    }

    @Override
    public List<SettleResult> commitAll(List<CommitRequest> requests) {
      List<SettleResult> out = new ArrayList<>(requests.size());
      for (CommitRequest c : requests) {
        out.add(commit(c));
      }
      return out;
    }

    @Override
    public SettleResult release(ReleaseRequest request) {
      SettleResult r = holder(request.token()).release(request);
      partitionOfToken.remove(request.token());
      return r;
    }

    @Override
    public SettleResult extend(ExtendRequest request) {
      return holder(request.token()).extend(request);
    }

    @Override
    public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
      KeyState found = null;
      for (DedupStore s : new ArrayList<>(ready.values())) {
        KeyState k = safely(() -> s.inspect(scope, key, nowMillis), null);
        if (k != null && !(k instanceof KeyState.Absent)) {
          return k;
        }
        found = k;
      }
      return found != null ? found : new KeyState.Absent();
    }

    @Override
    public boolean forget(Scope scope, DedupKey key) {
      boolean any = false;
      for (DedupStore s : new ArrayList<>(ready.values())) {
        any |= safely(() -> s.forget(scope, key), false);
      }
      return any;
    }

    @Override
    public long clear(Scope scope) {
      long n = 0;
      for (DedupStore s : new ArrayList<>(ready.values())) {
        n += safely(() -> s.clear(scope), 0L);
      }
      return n;
    }

    @Override
    public long sweepExpired(long nowMillis) {
      long n = 0;
      for (DedupStore s : new ArrayList<>(ready.values())) {
        n += safely(() -> s.sweepExpired(nowMillis), 0L);
      }
      return n;
    }

    @Override
    public StoreCapabilities capabilities() {
      // Committed keys survive a restart through the changelog; no outbox, no native expiry.
      return new StoreCapabilities(false, true, false, false);
    }

    @Override
    public String describe() {
      return KafkaLocalState.this.describe();
    }

    /** The source closes the state itself, after its consumer. */
    @Override
    public void close() {}

    private DedupStore holder(long token) {
      Integer p = partitionOfToken.get(token);
      if (p == null) {
        throw new StoreUnavailableException(
            describe(),
            false,
            "the reservation's partition is not owned here any more (revoked at a rebalance); its"
                + " new owner reads the record again");
      }
      return partition(p);
    }

    /** An admin call racing a revocation sees the partition as gone. */
    private <T> T safely(Supplier<T> call, T gone) {
      try {
        return call.get();
      } catch (IllegalStateException e) {
        return gone;
      }
    }
  }

  /** For tests: the partitions whose keys are restored and served here. */
  Map<Integer, DedupStore> readyPartitions() {
    return new HashMap<>(ready);
  }
}
