package dev.idem.server.deliver;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import dev.idem.IdemException;
import dev.idem.TimeSource;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Writes each event as one JSON line, to standard output or appended to a file:
 *
 * <pre>
 * {"pipeline":"shop-orders","idempotency_key":"...","ordering_key":null,
 *  "delivered_at":"2026-01-01T00:00:00.123Z","event":{...the event...}}
 * </pre>
 *
 * (one line; {@code event} is the event's JSON itself, compacted, not a string). A line is built
 * whole in memory and written with one call under a lock, so concurrent deliveries never
 * interleave. An event that is not JSON fails for good (it never becomes a broken line).
 *
 * <p>Durability of the file sink: each line is handed to the operating system before {@code
 * deliver} returns (no buffer in the JVM), so it survives a crash of the process. By default it is
 * not forced to disk: a power loss or kernel crash can lose the last few seconds of lines that were
 * reported delivered. With {@code fsync} on, each line is forced ({@link FileChannel#force}) before
 * it counts as delivered, which survives power loss at the cost of one disk flush per event.
 */
final class JsonLinesSink implements Sink {
  private static final JsonFactory JSON = new JsonFactory();

  private final String description;
  private final Target target;
  private final TimeSource time;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile boolean closed;

  private JsonLinesSink(String description, Target target, TimeSource time) {
    this.description = description;
    this.target = target;
    this.time = time;
  }

  /** A sink printing to a stream (standard output); the stream is flushed, never closed. */
  static JsonLinesSink stream(String description, PrintStream out, TimeSource time) {
    return new JsonLinesSink(description, new StreamTarget(out), time);
  }

  /** A sink appending to a file, creating it and its parent directories. */
  static JsonLinesSink file(Path path, boolean fsync, TimeSource time) {
    Path absolute = path.toAbsolutePath();
    try {
      Path parent = absolute.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      FileChannel channel =
          FileChannel.open(
              absolute,
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              StandardOpenOption.APPEND);
      return new JsonLinesSink("file:" + absolute, new FileTarget(channel, fsync), time);
    } catch (IOException e) {
      throw new IdemException(
          "cannot open deliver.file.path "
              + absolute
              + " for appending: "
              + e
              + "; check that the directory is writable",
          e);
    }
  }

  @Override
  public DeliveryOutcome deliver(Delivery delivery) {
    byte[] line;
    try {
      line = line(delivery, Instant.ofEpochMilli(time.wallMillis()));
    } catch (JsonProcessingException e) {
      return new DeliveryOutcome.Failed(
          "the event is not JSON, so it cannot be written as a JSON line: "
              + e.getOriginalMessage(),
          false);
    } catch (IOException e) {
      return new DeliveryOutcome.Failed("building the JSON line failed: " + e, false);
    }
    lock.lock();
    try {
      if (closed) {
        return new DeliveryOutcome.Failed(description + " is closed", true);
      }
      target.write(line);
    } catch (IOException e) {
      return new DeliveryOutcome.Failed("writing to " + description + " failed: " + e, true);
    } finally {
      lock.unlock();
    }
    return new DeliveryOutcome.Delivered(0, null, null);
  }

  private static byte[] line(Delivery delivery, Instant now) throws IOException {
    byte[] body = delivery.body();
    try (ByteArrayBuilder out = new ByteArrayBuilder(body.length + 200)) {
      try (JsonGenerator g = JSON.createGenerator(out)) {
        g.writeStartObject();
        g.writeStringField("pipeline", delivery.pipeline());
        g.writeStringField("idempotency_key", delivery.idempotencyKey());
        String orderingKey = delivery.orderingKey();
        if (orderingKey == null) {
          g.writeNullField("ordering_key");
        } else {
          g.writeStringField("ordering_key", orderingKey);
        }
        g.writeStringField("delivered_at", now.toString());
        g.writeFieldName("event");
        try (JsonParser p = JSON.createParser(body)) {
          if (p.nextToken() == null) {
            throw new JsonParseException(p, "the event is empty");
          }
          // Streams the event through (validating and compacting it) without building a tree.
          g.copyCurrentStructure(p);
          if (p.nextToken() != null) {
            throw new JsonParseException(p, "the event has more than one JSON value");
          }
        }
        g.writeEndObject();
      }
      out.write('\n');
      return out.toByteArray();
    }
  }

  @Override
  public String describe() {
    return description;
  }

  @Override
  public void close() {
    lock.lock();
    try {
      if (!closed) {
        closed = true;
        target.close();
      }
    } catch (IOException e) {
      throw new IdemException("closing " + description + " failed: " + e, e);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    return description;
  }

  /** Where lines go. Called under the sink's lock. */
  private interface Target {
    void write(byte[] line) throws IOException;

    void close() throws IOException;
  }

  private static final class StreamTarget implements Target {
    private final PrintStream out;

    StreamTarget(PrintStream out) {
      this.out = out;
    }

    @Override
    public void write(byte[] line) throws IOException {
      out.write(line, 0, line.length);
      out.flush();
      if (out.checkError()) { // PrintStream swallows IOExceptions and only sets this flag
        throw new IOException("the output stream reported an error");
      }
    }

    @Override
    public void close() {
      out.flush();
    }
  }

  private static final class FileTarget implements Target {
    private final FileChannel channel;
    private final boolean fsync;

    FileTarget(FileChannel channel, boolean fsync) {
      this.channel = channel;
      this.fsync = fsync;
    }

    @Override
    public void write(byte[] line) throws IOException {
      ByteBuffer buffer = ByteBuffer.wrap(line);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      if (fsync) {
        channel.force(false);
      }
    }

    @Override
    public void close() throws IOException {
      try {
        channel.force(false);
      } finally {
        channel.close();
      }
    }
  }
}
