package dev.idem.kafka.state;

import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.kafka.RecordKeys;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One consumer of the failover test, in this JVM (a thread) or in a child JVM ({@link #main}): a
 * {@link PartitionedDedupLoop} whose handler appends {@code A <key>} to a sink file when it acts on
 * a record, and which appends {@code D <key>} for the batch's keys once {@code pollOnce} returned
 * (the changelog flushed, the offsets committed). Each line is one unbuffered write, so a SIGKILL
 * loses none that were written.
 */
final class StateWorker implements AutoCloseable {
  static final Scope SCOPE = Scope.of("kstate-failover");

  private final PartitionedDedupState state;
  private final KafkaConsumer<String, String> consumer;
  private final PartitionedDedupLoop<String, String> loop;
  private final FileOutputStream sink;
  private final List<String> batch = new ArrayList<>();

  StateWorker(
      String bootstrap, String topic, String group, Path dir, Path sinkFile, long sleepMillis)
      throws IOException {
    Map<String, Object> clients = Map.of("bootstrap.servers", bootstrap);
    this.state =
        PartitionedDedupState.open(
            PartitionedStateConfig.builder(topic, dir, clients).replicationFactor(1).build());
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
    c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
    this.consumer = new KafkaConsumer<>(c);
    this.sink = new FileOutputStream(sinkFile.toFile(), true);
    this.loop =
        PartitionedDedupLoop.<String, String>builder(
                consumer,
                state,
                store ->
                    Deduplicator.builder(store, SCOPE)
                        .config(dev.idem.DedupConfig.custom().lease(Duration.ofSeconds(30)).build())
                        .build(),
                RecordKeys.recordKey(),
                r -> {
                  if (sleepMillis > 0) {
                    Thread.sleep(sleepMillis);
                  }
                  write("A " + r.key());
                  batch.add(r.key());
                })
            .retryBackoff(Duration.ofMillis(100))
            .build()
            .subscribe();
  }

  PartitionedDedupState state() {
    return state;
  }

  /** Polls once and marks the acted-on keys of the batch durable. */
  void pollOnce() {
    loop.pollOnce(Duration.ofMillis(100));
    for (String key : batch) {
      write("D " + key);
    }
    batch.clear();
  }

  void stop() {
    loop.stop();
  }

  private void write(String line) {
    try {
      sink.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() throws IOException {
    consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(5)));
    state.close();
    sink.close();
  }

  /**
   * Runs one worker until killed.
   *
   * @param args bootstrap servers, topic, group, state directory, sink file, handler sleep in ms
   */
  public static void main(String[] args) throws Exception {
    try (StateWorker w =
        new StateWorker(
            args[0],
            args[1],
            args[2],
            Path.of(args[3]),
            Path.of(args[4]),
            Long.parseLong(args[5]))) {
      while (true) {
        w.pollOnce();
      }
    }
  }
}
