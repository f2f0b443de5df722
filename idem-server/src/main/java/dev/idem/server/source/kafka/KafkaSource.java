package dev.idem.server.source.kafka;

import dev.idem.IdemException;
import dev.idem.TimeSource;
import dev.idem.server.config.KafkaSourceSettings;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.OutageLog;
import dev.idem.server.source.SourceMeters;
import dev.idem.server.source.Sources;
import io.micrometer.core.instrument.Meter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code source.kafka}: a consumer group whose records are a pipeline's events.
 *
 * <p>One thread polls. Each poll's records of a partition go to {@link Pipeline#processAll} (one
 * batch reserve), and are then walked in offset order:
 *
 * <ul>
 *   <li>accepted or duplicate: settled, the partition's committable offset moves past it;
 *   <li>rejected (not JSON, no key, too large) or conflict: a bad record; it is published to the
 *       dead-letter topic (headers {@code idem-reason}, {@code idem-original-topic}, {@code
 *       idem-original-partition}, {@code idem-original-offset}) or logged, as configured, and the
 *       offset moves past it;
 *   <li>in flight, unavailable: the partition is paused, its position set back to this record, and
 *       it resumes after a backoff; nothing after it is committed;
 *   <li>failed (transform, delivery): like in flight, until {@code max_attempts}; then a bad
 *       record.
 * </ul>
 *
 * <p>Settled offsets are committed synchronously after each poll and when partitions are revoked,
 * so a rebalance or a stop loses nothing and re-reads at most what was not settled (those records
 * come back as duplicates, or are processed then). A record after an unsettled one in the same poll
 * may already have been processed when the unsettled one is retried: the first delivery of such a
 * pair is out of order; a record settled at its first try keeps its partition's order.
 *
 * <p>With {@code state} ({@link KafkaLocalState}) the keys live next to the consumer: a new
 * partition is paused until its keys are restored from the changelog, each partition's records are
 * decided against its own keys, and offsets are committed only after the changelog is flushed.
 */
public final class KafkaSource implements EventSource {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaSource.class);
  private static final Duration POLL = Duration.ofMillis(200);
  private static final Duration DEAD_LETTER_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

  private final KafkaSourceSettings settings;
  private final Pipeline pipeline;
  private final TimeSource time;
  private final SourceMeters meters;
  private final OutageLog outage;
  private final Object lifecycle = new Object();
  private volatile boolean running;
  private @Nullable Thread thread;
  private @Nullable KafkaConsumer<byte[], byte[]> consumer;
  private @Nullable KafkaProducer<byte[], byte[]> deadLetters;
  private final @Nullable KafkaLocalState state;

  // Consumer-thread state, per assigned partition.
  private final Map<TopicPartition, Long> toCommit = new HashMap<>();
  private final Map<TopicPartition, Long> resumeAtNanos = new HashMap<>();
  private final Map<TopicPartition, Integer> retries = new HashMap<>();
  private final Map<TopicPartition, long[]> failures = new HashMap<>(); // {offset, attempts}
  private final Map<TopicPartition, AtomicLong> lag = new HashMap<>();
  private final Map<TopicPartition, Meter> lagGauges = new HashMap<>();

  /**
   * Makes the source; nothing connects until {@link #start}.
   *
   * @param settings the source's settings
   * @param pipeline the pipeline it feeds
   * @param context meters and clock
   */
  public KafkaSource(KafkaSourceSettings settings, Pipeline pipeline, Sources.Context context) {
    this(settings, pipeline, context, null);
  }

  /**
   * Makes the source with its partitioned local state; nothing connects until {@link #start}.
   *
   * @param settings the source's settings
   * @param pipeline the pipeline it feeds (its dedup store is {@code state.store()})
   * @param context meters and clock
   * @param state the local state of {@code source.kafka.state}, or null; the source opens and
   *     closes it
   */
  public KafkaSource(
      KafkaSourceSettings settings,
      Pipeline pipeline,
      Sources.Context context,
      @Nullable KafkaLocalState state) {
    this.state = state;
    this.settings = settings;
    this.pipeline = pipeline;
    this.time = context.time();
    this.meters = SourceMeters.of(context, "kafka");
    this.outage =
        new OutageLog(
            LOG,
            pipeline.id(),
            "source.kafka (group " + settings.group() + ")",
            "nothing is committed past the first unsettled record; its partition pauses and is"
                + " read again from there after a backoff",
            time,
            OutageLog.DEFAULT_REMINDER);
  }

  @Override
  public String pipeline() {
    return pipeline.id();
  }

  /**
   * Returns this source's meters.
   *
   * @return the meters
   */
  public SourceMeters meters() {
    return meters;
  }

  @Override
  public void start() {
    synchronized (lifecycle) {
      if (thread != null) {
        return;
      }
      try {
        if (state != null) {
          Map<String, Object> clients = new HashMap<>(settings.properties());
          clients.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap());
          state.open(clients);
        }
        consumer = new KafkaConsumer<>(consumerConfig());
        if (settings.onBadRecord() == KafkaSourceSettings.BadRecord.DEAD_LETTER) {
          deadLetters = new KafkaProducer<>(producerConfig());
        }
      } catch (KafkaException e) {
        closeClients();
        throw new IdemException(
            "pipeline " + pipeline.id() + ": source.kafka cannot start: " + e.getMessage(), e);
      }
      running = true;
      Thread t = new Thread(this::run, "idem-kafka-" + pipeline.id());
      t.setDaemon(true);
      thread = t;
      t.start();
    }
  }

  @Override
  public void close() {
    Thread t;
    synchronized (lifecycle) {
      t = thread;
      if (t == null || !running) {
        if (t == null) {
          closeClients();
        }
        return;
      }
      running = false;
    }
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c != null) {
      c.wakeup();
    }
    try {
      t.join(CLOSE_TIMEOUT.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      LOG.warn(
          "pipeline={} source.kafka did not stop within {} s; what it did not commit is read again",
          pipeline.id(),
          CLOSE_TIMEOUT.toSeconds());
    }
  }

  private Map<String, Object> consumerConfig() {
    Map<String, Object> c = new HashMap<>(settings.properties());
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, settings.group());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, settings.maxPollRecords());
    c.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "idem-" + pipeline.id());
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    if (state != null) {
      // Move only the partitions that change owner, so the others keep their restored keys.
      c.putIfAbsent(
          ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
          CooperativeStickyAssignor.class.getName());
    }
    return c;
  }

  private Map<String, Object> producerConfig() {
    Map<String, Object> c = new HashMap<>();
    // Client settings that concern the connection (security, ...) apply to both clients.
    settings
        .properties()
        .forEach(
            (k, v) -> {
              if (ProducerConfig.configNames().contains(k)) {
                c.put(k, v);
              }
            });
    c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap());
    c.put(ProducerConfig.ACKS_CONFIG, "all");
    c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    c.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "idem-" + pipeline.id() + "-dead-letters");
    c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return c;
  }

  private void run() {
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c == null) {
      return;
    }
    try {
      c.subscribe(
          settings.topics(),
          state == null ? new Rebalance(c) : state.listener(c, new Rebalance(c)));
      LOG.info(
          "pipeline={} source.kafka consuming topics={} group={}",
          pipeline.id(),
          settings.topics(),
          settings.group());
      while (running) {
        if (state != null) {
          state.restoreSome(c, this::forgetProgress);
        }
        resumeDue(c);
        ConsumerRecords<byte[], byte[]> records;
        try {
          records = c.poll(POLL);
        } catch (WakeupException e) {
          break;
        }
        if (!records.isEmpty() && LOG.isDebugEnabled()) {
          LOG.debug(
              "pipeline={} source.kafka polled {} records of {}",
              pipeline.id(),
              records.count(),
              records.partitions());
        }
        for (TopicPartition tp : records.partitions()) {
          handle(c, tp, records.records(tp));
        }
        commit(c, new HashSet<>(toCommit.keySet()));
        updateLag(c);
      }
    } catch (WakeupException e) {
      // close() during a commit or a rebalance: the commit below settles what is settled
    } catch (RuntimeException e) {
      LOG.error(
          "pipeline={} source.kafka stopped on an unexpected error; what was not committed is read"
              + " again after a restart",
          pipeline.id(),
          e);
    } finally {
      try {
        commit(c, new HashSet<>(toCommit.keySet()));
      } catch (RuntimeException e) {
        LOG.warn("pipeline={} source.kafka final commit failed: {}", pipeline.id(), e.toString());
      }
      closeClients();
    }
  }

  /** Processes one poll's records of a partition in order; stops at the first unsettled one. */
  private void handle(
      KafkaConsumer<byte[], byte[]> c,
      TopicPartition tp,
      List<ConsumerRecord<byte[], byte[]>> records) {
    Outcome[] outcomes = new Outcome[records.size()];
    List<InboundRequest> events = new ArrayList<>(records.size());
    List<Integer> positions = new ArrayList<>(records.size());
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> r = records.get(i);
      byte[] value = r.value();
      if (value == null) {
        outcomes[i] = badInput("empty_record", "the record has no value (a tombstone)");
      } else if (value.length > settings.maxBody()) {
        outcomes[i] =
            badInput(
                "body_too_large",
                "the record value has "
                    + value.length
                    + " bytes, more than max_body ("
                    + settings.maxBody()
                    + ")");
      } else {
        events.add(event(r));
        positions.add(i);
      }
    }
    List<Outcome> decided =
        events.isEmpty()
            ? List.of()
            : state == null
                ? pipeline.processAll(events)
                : state.inPartition(tp, () -> pipeline.processAll(events));
    for (int j = 0; j < decided.size(); j++) {
      outcomes[positions.get(j)] = decided.get(j);
    }
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> r = records.get(i);
      Outcome o = outcomes[i];
      meters.count(o);
      boolean advance;
      if (o.settled()) {
        advance = true;
      } else if (o instanceof Outcome.Rejected rej) {
        advance = badRecord(r, rej.code() + ": " + rej.message());
      } else if (o instanceof Outcome.Conflict) {
        advance = badRecord(r, "conflict: the key was used before with a different payload");
      } else if (o instanceof Outcome.Failed f) {
        long[] fail = failures.get(tp);
        if (fail == null || fail[0] != r.offset()) {
          fail = new long[] {r.offset(), 0};
          failures.put(tp, fail);
        }
        fail[1]++;
        if (fail[1] >= settings.maxAttempts()) {
          advance =
              badRecord(r, f.code() + ": " + f.message() + " (after " + fail[1] + " attempts)");
        } else {
          LOG.warn(
              "pipeline={} topic={} partition={} offset={} failed ({}: {}), attempt {} of {}",
              pipeline.id(),
              r.topic(),
              r.partition(),
              r.offset(),
              f.code(),
              f.message(),
              fail[1],
              settings.maxAttempts());
          advance = false;
        }
      } else {
        advance = false; // in flight, unavailable
      }
      if (!advance) {
        retryFrom(c, tp, r, o);
        outage.observe(decided, o instanceof Outcome.Unavailable ? records.size() - i : 0);
        return;
      }
      failures.remove(tp);
      retries.remove(tp);
      toCommit.put(tp, r.offset() + 1);
    }
    outage.observe(decided, 0);
  }

  private InboundRequest event(ConsumerRecord<byte[], byte[]> r) {
    Function<String, @Nullable String> headers =
        name -> {
          Header found = null;
          for (Header h : r.headers()) {
            if (h.key().equalsIgnoreCase(name)) {
              found = h; // the last one wins, as in Headers.lastHeader
            }
          }
          return found == null || found.value() == null
              ? null
              : new String(found.value(), StandardCharsets.UTF_8);
        };
    return new InboundRequest(
        r.value(),
        headers,
        List.of(),
        Map.of(
            "topic", r.topic(),
            "partition", Integer.toString(r.partition()),
            "offset", Long.toString(r.offset())));
  }

  private static Outcome.Rejected badInput(String code, String message) {
    return new Outcome.Rejected(Outcome.Rejection.BAD_INPUT, code, message);
  }

  /** Pauses the partition and sets it back to the record, to be read again after a backoff. */
  private void retryFrom(
      KafkaConsumer<byte[], byte[]> c,
      TopicPartition tp,
      ConsumerRecord<byte[], byte[]> r,
      Outcome why) {
    int n = retries.merge(tp, 1, Integer::sum);
    long base = settings.backoff().toMillis();
    long delay = Math.min(settings.maxBackoff().toMillis(), base << Math.min(20, n - 1));
    c.pause(Set.of(tp));
    c.seek(tp, r.offset());
    resumeAtNanos.put(tp, time.monotonicNanos() + TimeUnit.MILLISECONDS.toNanos(delay));
    meters.count(SourceMeters.Kind.RETRIED);
    if (n == 1 || n % 10 == 0) {
      LOG.info(
          "pipeline={} topic={} partition={} paused at offset={} ({}), retry {} in {} ms",
          pipeline.id(),
          r.topic(),
          r.partition(),
          r.offset(),
          SourceMeters.Kind.of(why).tag(),
          n,
          delay);
    }
  }

  private void resumeDue(KafkaConsumer<byte[], byte[]> c) {
    if (resumeAtNanos.isEmpty()) {
      return;
    }
    long now = time.monotonicNanos();
    List<TopicPartition> due = new ArrayList<>();
    resumeAtNanos.forEach(
        (tp, at) -> {
          if (now - at >= 0) {
            due.add(tp);
          }
        });
    if (!due.isEmpty()) {
      due.forEach(resumeAtNanos::remove);
      Set<TopicPartition> assigned = c.assignment();
      List<TopicPartition> resume = new ArrayList<>();
      for (TopicPartition tp : due) {
        if (assigned.contains(tp)) {
          resume.add(tp);
        }
      }
      c.resume(resume);
      LOG.debug(
          "pipeline={} source.kafka resumed {} after a backoff (paused now {})",
          pipeline.id(),
          resume,
          c.paused());
    }
  }

  /** Publishes a bad record to the dead-letter topic, or logs it; false if that failed. */
  private boolean badRecord(ConsumerRecord<byte[], byte[]> r, String reason) {
    KafkaProducer<byte[], byte[]> p = deadLetters;
    if (p == null) {
      LOG.warn(
          "pipeline={} topic={} partition={} offset={} skipped (on_bad_record: log_and_skip): {}",
          pipeline.id(),
          r.topic(),
          r.partition(),
          r.offset(),
          reason);
      meters.count(SourceMeters.Kind.SKIPPED);
      return true;
    }
    String topic = settings.deadLetterTopic();
    ProducerRecord<byte[], byte[]> dead =
        new ProducerRecord<>(topic, null, r.key(), r.value(), r.headers());
    dead.headers().add("idem-reason", utf8(reason));
    dead.headers().add("idem-original-topic", utf8(r.topic()));
    dead.headers().add("idem-original-partition", utf8(Integer.toString(r.partition())));
    dead.headers().add("idem-original-offset", utf8(Long.toString(r.offset())));
    dead.headers().add("idem-pipeline", utf8(pipeline.id()));
    try {
      p.send(dead).get(DEAD_LETTER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      LOG.warn(
          "pipeline={} topic={} partition={} offset={} could not be dead-lettered to {}: {}; it"
              + " is retried",
          pipeline.id(),
          r.topic(),
          r.partition(),
          r.offset(),
          topic,
          e.toString());
      return false;
    }
    LOG.warn(
        "pipeline={} topic={} partition={} offset={} dead-lettered to {}: {}",
        pipeline.id(),
        r.topic(),
        r.partition(),
        r.offset(),
        topic,
        reason);
    meters.count(SourceMeters.Kind.DEAD_LETTERED);
    return true;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Commits the settled offsets of these partitions. */
  private void commit(KafkaConsumer<byte[], byte[]> c, Collection<TopicPartition> partitions) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : partitions) {
      Long next = toCommit.get(tp);
      if (next != null) {
        offsets.put(tp, new OffsetAndMetadata(next));
      }
    }
    if (offsets.isEmpty()) {
      return;
    }
    if (state != null && !state.flushed()) {
      LOG.debug("pipeline={} source.kafka commit of {} deferred", pipeline.id(), offsets);
      return; // the changelog must never be behind a committed offset; tried again next time
    }
    try {
      c.commitSync(offsets);
      offsets.keySet().forEach(toCommit::remove);
      LOG.debug("pipeline={} source.kafka committed {}", pipeline.id(), offsets);
    } catch (WakeupException e) {
      // close() woke the consumer: commit once more, then stop.
      c.commitSync(offsets);
      offsets.keySet().forEach(toCommit::remove);
      throw e;
    } catch (RebalanceInProgressException e) {
      // A (cooperative) rebalance is under way and the partitions are still ours: keep the offsets
      // and commit them after a later poll. Dropping them left a partition whose last records
      // were settled during a rebalance uncommitted for good (lag that never clears, and those
      // records read again after the next restart or rebalance): issue 16's stall.
      LOG.debug(
          "pipeline={} source.kafka commit of {} deferred: a rebalance is in progress",
          pipeline.id(),
          offsets);
    } catch (KafkaException e) {
      // Lost the partitions meanwhile (a rebalance): the new owner reads the records again, which
      // are duplicates for the store.
      LOG.warn("pipeline={} source.kafka commit failed: {}", pipeline.id(), e.toString());
      offsets.keySet().forEach(toCommit::remove);
    }
  }

  private void updateLag(KafkaConsumer<byte[], byte[]> c) {
    for (Map.Entry<TopicPartition, AtomicLong> e : lag.entrySet()) {
      OptionalLong l = c.currentLag(e.getKey());
      if (l.isPresent()) {
        e.getValue().set(l.getAsLong());
      }
    }
  }

  /** Forgets what was settled or retried on these partitions (they are read again). */
  private void forgetProgress(Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      toCommit.remove(tp);
      resumeAtNanos.remove(tp);
      retries.remove(tp);
      failures.remove(tp);
    }
  }

  private void forget(Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      toCommit.remove(tp);
      resumeAtNanos.remove(tp);
      retries.remove(tp);
      failures.remove(tp);
      lag.remove(tp);
      Meter g = lagGauges.remove(tp);
      if (g != null) {
        meters.remove(g);
      }
    }
  }

  private void closeClients() {
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c != null) {
      try {
        c.close(CloseOptions.timeout(Duration.ofSeconds(10)));
      } catch (RuntimeException e) {
        LOG.debug("closing the consumer", e);
      }
    }
    KafkaProducer<byte[], byte[]> p = deadLetters;
    if (p != null) {
      p.close(Duration.ofSeconds(5));
    }
    if (state != null) {
      try {
        state.close();
      } catch (RuntimeException e) {
        LOG.warn("pipeline={} source.kafka.state close failed: {}", pipeline.id(), e.toString());
      }
    }
  }

  /** Commits what is settled before partitions go; resets the state of new ones. */
  private final class Rebalance implements ConsumerRebalanceListener {
    private final KafkaConsumer<byte[], byte[]> consumer;

    Rebalance(KafkaConsumer<byte[], byte[]> consumer) {
      this.consumer = consumer;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      try {
        commit(consumer, partitions);
      } finally {
        forget(partitions);
      }
      if (!partitions.isEmpty()) {
        LOG.info("pipeline={} source.kafka revoked {}", pipeline.id(), partitions);
      }
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      forget(partitions);
      LOG.warn(
          "pipeline={} source.kafka lost {} (their unsettled records are read again)",
          pipeline.id(),
          partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      for (TopicPartition tp : partitions) {
        AtomicLong l = new AtomicLong();
        lag.put(tp, l);
        lagGauges.put(tp, meters.lag("partition", tp.toString(), l, AtomicLong::get));
      }
      if (!partitions.isEmpty()) {
        LOG.info("pipeline={} source.kafka assigned {}", pipeline.id(), partitions);
      }
    }
  }
}
