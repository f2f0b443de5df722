package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import dev.idem.IdemException;
import dev.idem.TimeSource;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Makes the {@link Sink}s. Every sink is thread-safe, makes one attempt per call (retries belong to
 * {@link SyncDeliverer} and {@link OutboxDispatcher}), reports downstream failures as values, and
 * releases its resources on {@link Sink#close()}.
 */
public final class Sinks {
  private Sinks() {}

  /**
   * A sink that POSTs each event as JSON, with {@code Idempotency-Key} (see {@link
   * HttpSinkSettings}). Starts one HTTP client with its connection pool; no request is made until
   * the first delivery.
   *
   * @param settings the URL, headers, timeout and limits
   * @return the sink
   * @throws IdemException if the HTTP client cannot start
   */
  public static Sink http(HttpSinkSettings settings) {
    return new HttpSink(Objects.requireNonNull(settings, "settings"), TimeSource.system());
  }

  /**
   * A sink that prints each event to standard output as one JSON line: {@code
   * {"pipeline","idempotency_key","ordering_key","delivered_at","event"}}, with the event embedded
   * as JSON. Prints to the {@code System.out} of the moment it is made; flushes each line.
   *
   * @return the sink
   */
  public static Sink stdout() {
    return JsonLinesSink.stream("stdout", System.out, TimeSource.system());
  }

  /**
   * A sink that appends each event to a file as one JSON line (the format of {@link #stdout()}),
   * creating the file and its parent directories. Lines never interleave; each reaches the
   * operating system before the delivery counts, but is not forced to disk (see {@link #file(Path,
   * boolean)}).
   *
   * @param path the file
   * @return the sink
   * @throws IdemException if the file cannot be opened for appending
   */
  public static Sink file(Path path) {
    return file(path, false);
  }

  /**
   * A sink that appends each event to a file as one JSON line.
   *
   * @param path the file
   * @param fsync whether each line is forced to disk before the delivery counts: survives power
   *     loss, at the cost of one disk flush per event
   * @return the sink
   * @throws IdemException if the file cannot be opened for appending
   */
  public static Sink file(Path path, boolean fsync) {
    return JsonLinesSink.file(Objects.requireNonNull(path, "path"), fsync, TimeSource.system());
  }

  /**
   * A sink that inserts each event into a table (created if missing), keyed by its idempotency key:
   * an event already in the table counts as delivered. Opens a small connection pool lazily.
   *
   * @param settings the URL, table, credentials and pool size
   * @return the sink
   * @throws IdemConfigException if no JDBC driver accepts the URL
   */
  public static Sink jdbc(JdbcSinkSettings settings) {
    return new JdbcSink(Objects.requireNonNull(settings, "settings"), TimeSource.system());
  }

  /**
   * A sink that publishes each event to a JetStream subject and counts it delivered when the
   * stream's publish ack came back, with {@code Idempotency-Key} and {@code Nats-Msg-Id} headers
   * (see {@link NatsSink}). Connects at the first delivery.
   *
   * @param url the server URL(s), comma separated
   * @param subject the subject (a stream must capture it)
   * @param stream the stream expected to store it, or null for any
   * @param timeout how long to wait for the publish ack (and to connect)
   * @return the sink
   */
  public static Sink nats(
      String url,
      String subject,
      @org.jspecify.annotations.Nullable String stream,
      Duration timeout) {
    return new NatsSink(url, subject, stream, timeout);
  }
}
