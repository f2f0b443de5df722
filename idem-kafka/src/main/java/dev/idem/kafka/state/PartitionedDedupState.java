package dev.idem.kafka.state;

import dev.idem.IdemConfigException;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoredEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka-partitioned dedup state (the Kafka Streams model on plain Kafka clients): each consumer of
 * a group keeps the dedup state of the input partitions it owns in a local RocksDB, one column
 * family per partition, and writes every change (reserve, commit, release, expiry, forget) to a
 * compacted changelog topic keyed by scope and dedup key, changelog partition = input partition. No
 * shared store: scale is the input topic's partition count.
 *
 * <ul>
 *   <li>{@link #flush()} waits until every change so far is in the changelog (an idempotent
 *       producer, {@code acks=all}); {@link PartitionedDedupLoop} calls it before each offset
 *       commit, so the changelog is never behind a committed offset.
 *   <li>On assignment ({@link #rebalanceListener(Consumer)}) each new partition is paused and its
 *       state restored from the changelog, from the earliest offset to the end offset read at
 *       assignment; {@link #restoreSome(Consumer, Duration)} does that in slices between polls, and
 *       resumes a partition when it is restored. In-flight entries of the previous owner are
 *       dropped at the end of a restore (their work's key commit never became durable: at least
 *       once), and so are expired entries (with tombstones, so the changelog shrinks).
 *   <li>On revocation the changes are flushed and the partition's state is dropped locally; a lost
 *       partition is dropped without a flush.
 * </ul>
 *
 * <p>Keys must be partitioned like the topic: the same dedup key always in the same partition (e.g.
 * {@link dev.idem.kafka.RecordKeys#recordKey()} with the default partitioner). A key seen in two
 * partitions is deduplicated in each separately.
 *
 * <p>The local directory is a cache: it is emptied when the state opens, and everything is rebuilt
 * from the changelog. It is marked ({@code .idem-kafka-state}) and locked while open: a directory
 * that holds other files, or one another open state holds, is refused. Not for a zombie owner: a
 * consumer that lost its partitions without knowing (a long GC pause) may still append to their
 * changelog until its next poll; this mode does not fence it (a transactional producer would), so
 * keep {@code max.poll.interval.ms} and the session timeout such that a paused consumer is noticed.
 * Thread-safety: call everything from the consumer's thread, except the {@link DedupStore}s, which
 * are thread-safe.
 */
public final class PartitionedDedupState implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PartitionedDedupState.class);

  static {
    RocksDB.loadLibrary();
  }

  /** The file that marks a directory as this state's, locked while the state is open. */
  static final String MARKER = ".idem-kafka-state";

  private final PartitionedStateConfig config;
  private final FileChannel markerChannel;
  private final FileLock lock;
  private final Path dbDir;
  private final DBOptions dbOptions;
  private final ColumnFamilyOptions cfOptions;
  private final WriteOptions writes;
  private final RocksDB db;
  private final ColumnFamilyHandle defaultCf;
  private final KafkaProducer<byte[], byte[]> producer;
  private final KafkaConsumer<byte[], byte[]> restorer;
  private final AtomicReference<@Nullable Exception> sendFailure = new AtomicReference<>();
  private final AtomicLong sendErrors = new AtomicLong();
  private final Map<Integer, PartitionStore> owned = new HashMap<>();
  private final Map<Integer, Restore> restoring = new HashMap<>();
  private final List<RestoreStats> restored = new ArrayList<>();
  private boolean closed;

  private PartitionedDedupState(PartitionedStateConfig config) {
    this.config = config;
    Path dir = config.directory();
    this.markerChannel = claim(dir);
    FileLock l;
    try {
      l = markerChannel.tryLock();
    } catch (IOException | OverlappingFileLockException e) {
      l = null;
    }
    if (l == null) {
      closeQuietly(markerChannel);
      throw new IdemConfigException(
          "the state directory "
              + dir
              + " is used by another consumer: give each instance its own directory");
    }
    this.lock = l;
    this.dbDir = dir.resolve("db");
    try {
      deleteRecursively(dbDir);
      Files.createDirectories(dbDir);
      ensureChangelogTopic(config);
    } catch (RuntimeException | IOException e) {
      unlock();
      if (e instanceof IOException io) {
        throw new UncheckedIOException("cannot create the state directory " + dbDir, io);
      }
      throw (RuntimeException) e;
    }
    this.dbOptions = new DBOptions().setCreateIfMissing(true);
    this.cfOptions = new ColumnFamilyOptions();
    // The local files are a cache rebuilt from the changelog: no write-ahead log.
    this.writes = new WriteOptions().setDisableWAL(true);
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try {
      this.db =
          RocksDB.open(
              dbOptions,
              dbDir.toString(),
              List.of(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOptions)),
              handles);
    } catch (RocksDBException e) {
      unlock();
      throw new StoreUnavailableException(
          "rocksdb:" + dir, false, "cannot open the local state in " + dir + ": " + e, e);
    }
    this.defaultCf = handles.get(0);
    Map<String, Object> p = new HashMap<>(config.clientConfig());
    p.remove(ConsumerConfig.GROUP_ID_CONFIG);
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    this.producer = new KafkaProducer<>(only(p, ProducerConfig.configNames()));
    Map<String, Object> c = new HashMap<>(config.clientConfig());
    c.remove(ConsumerConfig.GROUP_ID_CONFIG);
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50_000);
    c.putIfAbsent(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 8 << 20);
    c.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-restore-" + config.changelogTopic());
    this.restorer = new KafkaConsumer<>(only(c, ConsumerConfig.configNames()));
  }

  /**
   * Opens the state: empties the directory, creates the changelog topic if it is missing
   * (compacted, as many partitions as the input topic), opens the local RocksDB and the Kafka
   * clients.
   *
   * @param config the settings
   * @return the open state; close it after the consumer
   * @throws IdemConfigException if the input topic does not exist, or the changelog exists with
   *     another partition count than the input topic
   */
  public static PartitionedDedupState open(PartitionedStateConfig config) {
    return new PartitionedDedupState(Objects.requireNonNull(config, "config"));
  }

  /**
   * Returns the settings.
   *
   * @return the config
   */
  public PartitionedStateConfig config() {
    return config;
  }

  /**
   * Returns the listener to subscribe the input topic with: it pauses and restores assigned
   * partitions, flushes and drops revoked ones.
   *
   * @param consumer the consumer that subscribes (it is paused and resumed)
   * @return the listener
   */
  public ConsumerRebalanceListener rebalanceListener(Consumer<?, ?> consumer) {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        try {
          flush();
        } catch (StoreUnavailableException e) {
          LOG.warn("changelog flush at revocation failed: {}", e.getMessage());
        }
        drop(partitions);
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        drop(partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        List<TopicPartition> started = beginRestore(input(partitions));
        if (!started.isEmpty()) {
          consumer.pause(started);
        }
        LOG.debug("assigned {}: paused to restore {}", partitions, started);
      }
    };
  }

  /**
   * Returns whether a partition's state is still being restored (it stays paused until then).
   *
   * @param partition the input partition
   * @return true while restoring
   */
  public boolean isRestoring(TopicPartition partition) {
    return partition.topic().equals(config.inputTopic())
        && restoring.containsKey(partition.partition());
  }

  /**
   * Returns whether any partition is being restored.
   *
   * @return true while restoring
   */
  public boolean isRestoring() {
    return !restoring.isEmpty();
  }

  /**
   * Reads the changelog of the partitions being restored for about {@code budget}, applies it, and
   * resumes on {@code consumer} each partition whose restore reached its end offset.
   *
   * @param consumer the input consumer (to resume restored partitions)
   * @param budget how long to read at most in this call
   * @return the input partitions that became ready in this call
   */
  public List<TopicPartition> restoreSome(Consumer<?, ?> consumer, Duration budget) {
    checkOpen();
    List<TopicPartition> ready = new ArrayList<>();
    if (restoring.isEmpty()) {
      return ready;
    }
    long deadline = System.nanoTime() + budget.toNanos();
    do {
      ConsumerRecords<byte[], byte[]> polled = restorer.poll(Duration.ofMillis(50));
      for (TopicPartition cl : polled.partitions()) {
        Restore restore = restoring.get(cl.partition());
        if (restore != null) {
          List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
          for (ConsumerRecord<byte[], byte[]> r : polled.records(cl)) {
            if (r.offset() < restore.endOffset) {
              rs.add(r);
            }
          }
          restore.store.restoreAll(rs);
          restore.records += rs.size();
          List<ConsumerRecord<byte[], byte[]>> all = polled.records(cl);
          restore.position = Math.max(restore.position, all.get(all.size() - 1).offset() + 1);
        }
      }
      for (Restore restore : new ArrayList<>(restoring.values())) {
        TopicPartition cl = new TopicPartition(config.changelogTopic(), restore.store.partition());
        if (restorer.position(cl) >= restore.endOffset) {
          finish(restore);
          ready.add(new TopicPartition(config.inputTopic(), restore.store.partition()));
        }
      }
    } while (!restoring.isEmpty() && System.nanoTime() - deadline < 0);
    if (LOG.isDebugEnabled() && !restoring.isEmpty()) {
      StringBuilder b = new StringBuilder();
      for (Restore r : restoring.values()) {
        TopicPartition cl = new TopicPartition(config.changelogTopic(), r.store.partition());
        b.append(' ')
            .append(r.store.partition())
            .append(": at ")
            .append(restorer.position(cl))
            .append(" of ")
            .append(r.endOffset);
      }
      LOG.debug("still restoring{} (restorer assigned {})", b, restorer.assignment());
    }
    if (!ready.isEmpty()) {
      reassignRestorer();
      Set<TopicPartition> assigned = consumer.assignment();
      List<TopicPartition> resume = ready.stream().filter(assigned::contains).toList();
      consumer.resume(resume);
      LOG.debug("resumed {} (ready {}, paused now {})", resume, ready, consumer.paused());
    }
    return ready;
  }

  /**
   * Returns, per partition being restored, how many changelog offsets are left to read (an upper
   * bound: compaction leaves gaps).
   *
   * @return input partition number to offsets left
   */
  public Map<Integer, Long> restoreRemaining() {
    Map<Integer, Long> out = new HashMap<>();
    for (Restore r : restoring.values()) {
      out.put(r.store.partition(), Math.max(0, r.endOffset - r.position));
    }
    return out;
  }

  /**
   * Returns how many changes the changelog's producer could not write since the state opened (each
   * makes the next {@link #flush()} fail). Thread-safe.
   *
   * @return the count
   */
  public long changelogSendErrors() {
    return sendErrors.get();
  }

  /**
   * Returns the store of an owned, restored partition.
   *
   * @param partition the input partition number
   * @return its store (thread-safe; closed when the partition is dropped)
   * @throws IllegalStateException if this consumer does not own it or it is still restoring
   */
  public DedupStore store(int partition) {
    checkOpen();
    if (restoring.containsKey(partition)) {
      throw new IllegalStateException(
          "partition " + partition + " of " + config.inputTopic() + " is still being restored");
    }
    PartitionStore s = owned.get(partition);
    if (s == null) {
      throw new IllegalStateException(
          "partition " + partition + " of " + config.inputTopic() + " is not owned here");
    }
    return s;
  }

  /**
   * Returns the input partitions whose state this consumer holds (restored or restoring).
   *
   * @return the partition numbers
   */
  public Set<Integer> ownedPartitions() {
    return Set.copyOf(owned.keySet());
  }

  /**
   * Waits until every change so far is acknowledged by the changelog's broker.
   *
   * @throws StoreUnavailableException if a change could not be written (offsets must then not be
   *     committed)
   */
  public void flush() {
    checkOpen();
    try {
      producer.flush();
    } catch (RuntimeException e) {
      throw new StoreUnavailableException(
          describe(), true, "changelog flush failed: " + e.getMessage(), e);
    }
    Exception failed = sendFailure.getAndSet(null);
    if (failed != null) {
      throw new StoreUnavailableException(
          describe(),
          true,
          "a change could not be written to the changelog "
              + config.changelogTopic()
              + ": "
              + failed.getMessage(),
          failed);
    }
  }

  /**
   * Removes the dead entries of every restored partition (with a tombstone each in the changelog).
   *
   * @param nowMillis the wall-clock time to judge by
   * @return how many were removed
   */
  public long sweepExpired(long nowMillis) {
    checkOpen();
    long n = 0;
    for (PartitionStore s : owned.values()) {
      if (!restoring.containsKey(s.partition())) {
        n += s.sweepExpired(nowMillis);
      }
    }
    return n;
  }

  /**
   * Returns what each finished restore read, oldest first (for logs, tests and benchmarks).
   *
   * @return the statistics
   */
  public List<RestoreStats> restores() {
    return List.copyOf(restored);
  }

  /**
   * What one partition's restore did.
   *
   * @param partition the input partition
   * @param records changelog records read (puts and tombstones)
   * @param entries entries held after the restore
   * @param dropped in-flight or expired entries dropped at its end
   * @param duration how long it took from assignment to ready
   */
  public record RestoreStats(
      int partition, long records, long entries, long dropped, Duration duration) {}

  /**
   * Returns a description for logs.
   *
   * @return e.g. {@code kafka-partitioned:orders-changelog@/var/lib/idem/state}
   */
  public String describe() {
    return "kafka-partitioned:" + config.changelogTopic() + "@" + config.directory();
  }

  /** Flushes what it can, then closes the clients and the local RocksDB, and deletes its files. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    try {
      producer.flush();
    } catch (RuntimeException e) {
      LOG.warn("changelog flush at close failed: {}", e.getMessage());
    }
    closed = true;
    for (PartitionStore s : owned.values()) {
      s.close();
      s.columnFamily().close();
    }
    owned.clear();
    restoring.clear();
    producer.close(Duration.ofSeconds(5));
    restorer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    defaultCf.close();
    db.close();
    writes.close();
    cfOptions.close();
    dbOptions.close();
    deleteRecursively(dbDir);
    unlock();
  }

  /**
   * Makes {@code dir} this state's: creates it, refuses a directory that holds other files (it is
   * emptied at every open), and opens its marker file (to lock).
   */
  private static FileChannel claim(Path dir) {
    try {
      Files.createDirectories(dir);
      Path marker = dir.resolve(MARKER);
      if (!Files.exists(marker)) {
        try (Stream<Path> entries = Files.list(dir)) {
          if (entries.findAny().isPresent()) {
            throw new IdemConfigException(
                "the state directory "
                    + dir
                    + " is not empty and is not an Idem Kafka state directory (no "
                    + MARKER
                    + "); it is emptied at every start, so give a new or empty directory");
          }
        }
      }
      return FileChannel.open(marker, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the state directory " + dir, e);
    }
  }

  private void unlock() {
    try {
      lock.release();
    } catch (IOException e) {
      LOG.debug("releasing the lock of {}", config.directory(), e);
    }
    closeQuietly(markerChannel);
  }

  private static void closeQuietly(FileChannel channel) {
    try {
      channel.close();
    } catch (IOException e) {
      LOG.debug("closing a state directory's marker", e);
    }
  }

  private List<TopicPartition> input(Collection<TopicPartition> partitions) {
    return partitions.stream().filter(tp -> tp.topic().equals(config.inputTopic())).toList();
  }

  /** Starts restoring the partitions not held yet; returns those (to pause until restored). */
  private List<TopicPartition> beginRestore(List<TopicPartition> partitions) {
    checkOpen();
    List<TopicPartition> started = new ArrayList<>();
    List<TopicPartition> changelogs = new ArrayList<>();
    for (TopicPartition tp : partitions) {
      if (owned.containsKey(tp.partition())) {
        continue; // kept over a cooperative rebalance
      }
      started.add(tp);
      changelogs.add(new TopicPartition(config.changelogTopic(), tp.partition()));
    }
    if (changelogs.isEmpty()) {
      return started;
    }
    Map<TopicPartition, Long> ends = restorer.endOffsets(changelogs);
    for (TopicPartition cl : changelogs) {
      int p = cl.partition();
      ColumnFamilyHandle cf;
      try {
        cf =
            db.createColumnFamily(
                new ColumnFamilyDescriptor(
                    ("p-" + p + "-" + System.nanoTime()).getBytes(StandardCharsets.UTF_8),
                    cfOptions));
      } catch (RocksDBException e) {
        throw new StoreUnavailableException(
            describe(), false, "cannot create the local state of partition " + p + ": " + e, e);
      }
      PartitionStore store =
          new PartitionStore(db, cf, writes, p, this::send, describe() + "#" + p);
      owned.put(p, store);
      restoring.put(p, new Restore(store, ends.getOrDefault(cl, 0L)));
    }
    reassignRestorer();
    for (TopicPartition cl : changelogs) {
      restorer.seekToBeginning(List.of(cl));
    }
    LOG.info(
        "restoring partitions {} of {} from {}",
        partitions,
        config.inputTopic(),
        config.changelogTopic());
    return started;
  }

  private void reassignRestorer() {
    List<TopicPartition> cls = new ArrayList<>();
    for (int p : restoring.keySet()) {
      cls.add(new TopicPartition(config.changelogTopic(), p));
    }
    Set<TopicPartition> before = new HashSet<>(restorer.assignment());
    restorer.assign(cls);
    for (TopicPartition cl : cls) {
      if (!before.contains(cl)) {
        restorer.seekToBeginning(List.of(cl));
      }
    }
  }

  private void finish(Restore restore) {
    PartitionStore store = restore.store;
    restoring.remove(store.partition());
    long now = System.currentTimeMillis();
    long entries = 0;
    long dropped = 0;
    try (RocksIterator it = db.newIterator(store.columnFamily())) {
      List<byte[]> drop = new ArrayList<>();
      for (it.seekToFirst(); it.isValid(); it.next()) {
        StoredEntry e = ChangelogCodec.entry(it.value());
        if (e == null || e.state() == StoredEntry.State.IN_FLIGHT || e.isDeadAt(now)) {
          drop.add(it.key());
        } else {
          entries++;
        }
      }
      for (byte[] k : drop) {
        store.restore(k, null);
        send(store.partition(), k, null);
        dropped++;
      }
    }
    RestoreStats stats =
        new RestoreStats(
            store.partition(),
            restore.records,
            entries,
            dropped,
            Duration.ofNanos(System.nanoTime() - restore.startNanos));
    restored.add(stats);
    LOG.info("restored {}", stats);
  }

  private void drop(Collection<TopicPartition> partitions) {
    if (closed) {
      return;
    }
    boolean wasRestoring = false;
    for (TopicPartition tp : input(partitions)) {
      PartitionStore s = owned.remove(tp.partition());
      wasRestoring |= restoring.remove(tp.partition()) != null;
      if (s != null) {
        s.close();
        try {
          db.dropColumnFamily(s.columnFamily());
        } catch (RocksDBException e) {
          LOG.warn("could not drop the local state of {}: {}", tp, e.toString());
        }
        s.columnFamily().close();
      }
    }
    if (wasRestoring) {
      reassignRestorer();
    }
  }

  private void send(int partition, byte[] key, byte @Nullable [] value) {
    producer.send(
        new ProducerRecord<>(config.changelogTopic(), partition, key, value),
        (md, e) -> {
          if (e != null) {
            sendErrors.incrementAndGet();
            sendFailure.compareAndSet(null, e);
          }
        });
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(describe() + " is closed");
    }
  }

  private static Map<String, Object> only(Map<String, Object> props, Set<String> names) {
    Map<String, Object> out = new HashMap<>();
    props.forEach(
        (k, v) -> {
          if (names.contains(k)) {
            out.put(k, v);
          }
        });
    return out;
  }

  private static void ensureChangelogTopic(PartitionedStateConfig config) {
    Map<String, Object> a = new HashMap<>();
    config.clientConfig().forEach((k, v) -> a.put(k, v));
    try (Admin admin =
        Admin.create(only(a, org.apache.kafka.clients.admin.AdminClientConfig.configNames()))) {
      Map<String, TopicDescription> input;
      try {
        input =
            admin
                .describeTopics(List.of(config.inputTopic()))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) {
          throw new IdemConfigException(
              "the input topic "
                  + config.inputTopic()
                  + " does not exist: create it first (e.g. kafka-topics.sh --create --topic "
                  + config.inputTopic()
                  + " --partitions <n>); its partition count is the state's, and the changelog "
                  + config.changelogTopic()
                  + " is created with as many");
        }
        throw e;
      }
      int partitions = input.get(config.inputTopic()).partitions().size();
      try {
        NewTopic topic =
            new NewTopic(config.changelogTopic(), partitions, config.replicationFactor())
                .configs(
                    Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
        admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw e;
        }
      }
      int existing = partitionCount(admin, config.changelogTopic());
      if (existing != partitions) {
        throw new IdemConfigException(
            "changelog topic "
                + config.changelogTopic()
                + " has "
                + existing
                + " partitions but the input topic "
                + config.inputTopic()
                + " has "
                + partitions
                + ": they must match (changelog partition = input partition); use a new"
                + " changelog topic after changing the input's partition count");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException(config.changelogTopic(), false, "interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      throw new StoreUnavailableException(
          config.changelogTopic(),
          false,
          "cannot check or create the changelog topic "
              + config.changelogTopic()
              + " for input topic "
              + config.inputTopic()
              + " (does the input topic exist?): "
              + cause,
          cause);
    }
  }

  /** The partition count of a topic, waiting out the moments after its creation. */
  private static int partitionCount(Admin admin, String topic)
      throws InterruptedException, ExecutionException, TimeoutException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        return admin
            .describeTopics(List.of(topic))
            .allTopicNames()
            .get(30, TimeUnit.SECONDS)
            .get(topic)
            .partitions()
            .size();
      } catch (ExecutionException e) {
        // A topic just created is not yet known to every broker's metadata.
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)
            || System.nanoTime() - deadline > 0) {
          throw e;
        }
        Thread.sleep(50);
      }
    }
  }

  private static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot empty the state directory " + dir, e);
    }
  }

  private static final class Restore {
    final PartitionStore store;
    final long endOffset;
    final long startNanos = System.nanoTime();
    long records;
    long position;

    Restore(PartitionStore store, long endOffset) {
      this.store = store;
      this.endOffset = endOffset;
    }
  }
}
