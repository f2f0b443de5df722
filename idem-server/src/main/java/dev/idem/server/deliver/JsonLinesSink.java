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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each event as one JSON line, to standard output or appended to a file:
 *
 * <pre>
 * {"pipeline":"shop-orders","idempotency_key":"...","ordering_key":null,
 *  "delivered_at":"2026-01-01T00:00:00.123Z","event":{...the event...}}
 * </pre>
 *
 * (one line; {@code event} is the event's JSON itself, compacted, not a string). A line is built
 * whole in memory, and concurrent deliveries' lines are written in groups ({@link GroupWriter}):
 * one write call for the lines that arrived while the previous write ran, so lines never interleave
 * and a busy sink makes one system call per group, not per event. An event that is not JSON fails
 * for good (it never becomes a broken line).
 *
 * <p>Durability of the file sink: each line is handed to the operating system before {@code
 * deliver} returns (no buffer in the JVM), so it survives a crash of the process. By default it is
 * not forced to disk: a power loss or kernel crash can lose the last few seconds of lines that were
 * reported delivered. With {@code fsync} on, each line is forced ({@link FileChannel#force}) before
 * it counts as delivered, which survives power loss at the cost of one disk flush per group of
 * lines written together (one per event when deliveries do not overlap).
 */
final class JsonLinesSink implements Sink {
  private static final Logger LOG = LoggerFactory.getLogger(JsonLinesSink.class);
  private static final JsonFactory JSON = new JsonFactory();

  private final String description;
  private final GroupWriter writer;
  private final TimeSource time;
  private static final DeliveryOutcome.Delivered DELIVERED =
      new DeliveryOutcome.Delivered(0, null, null);

  private JsonLinesSink(String description, GroupWriter.Output output, TimeSource time) {
    this.description = description;
    this.writer = new GroupWriter(output);
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
      FileTarget target = new FileTarget(channel, absolute, fsync);
      try {
        // A process killed in the middle of a write(2) (SIGKILL stops it at a page boundary)
        // leaves part of a line. Appended to as it is, that part would swallow the next event's
        // line; ended here, it stays a line of its own, and its event, never acknowledged, is
        // delivered again whole.
        if (target.endUnfinishedLine()) {
          LOG.warn(
              "deliver.file.path {} ended in the middle of a line (an earlier process stopped"
                  + " while writing it); ended that line so the next event starts on its own line",
              absolute);
        }
      } catch (IOException e) {
        channel.close();
        throw e;
      }
      return new JsonLinesSink("file:" + absolute, target, time);
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
      long millis = time.wallMillis();
      line = fastLine(delivery, millis);
      if (line == null) {
        line = line(delivery, Instant.ofEpochMilli(millis));
      }
    } catch (JsonProcessingException e) {
      return new DeliveryOutcome.Failed(
          "the event is not JSON, so it cannot be written as a JSON line: "
              + e.getOriginalMessage(),
          false);
    } catch (IOException e) {
      return new DeliveryOutcome.Failed("building the JSON line failed: " + e, false);
    }
    try {
      if (!writer.write(line)) {
        return new DeliveryOutcome.Failed(description + " is closed", true);
      }
    } catch (IOException e) {
      return new DeliveryOutcome.Failed(
          "writing to " + description + " failed: " + e.getCause(), true);
    }
    return DELIVERED;
  }

  /** The last {@code delivered_at} text, shared by the lines of one millisecond. */
  private static final class Stamp {
    final long millis;
    final byte[] text;

    Stamp(long millis) {
      this.millis = millis;
      this.text = Instant.ofEpochMilli(millis).toString().getBytes(StandardCharsets.US_ASCII);
    }
  }

  private volatile Stamp stamp = new Stamp(0);

  private byte[] stamp(long millis) {
    Stamp s = stamp;
    if (s.millis != millis) {
      s = new Stamp(millis);
      stamp = s;
    }
    return s.text;
  }

  private static final byte[] PIPELINE = ascii("{\"pipeline\":\"");
  private static final byte[] IDEMPOTENCY_KEY = ascii("\",\"idempotency_key\":\"");
  private static final byte[] NO_ORDERING_KEY = ascii("\",\"ordering_key\":null");
  private static final byte[] ORDERING_KEY = ascii("\",\"ordering_key\":\"");
  private static final byte[] DELIVERED_AT_AFTER_KEY = ascii("\",\"delivered_at\":\"");
  private static final byte[] DELIVERED_AT_AFTER_NULL = ascii(",\"delivered_at\":\"");
  private static final byte[] EVENT = ascii("\",\"event\":");

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The line, built by hand when that gives the bytes Jackson's copy would: the body is one JSON
   * value the pipeline's check accepted and {@link #verbatim} says copying it changes nothing, and
   * every other string of the line is {@link #plain} (needs no escape). Otherwise (or null) the
   * body is parsed and copied as before.
   */
  private byte @Nullable [] fastLine(Delivery delivery, long millis) {
    byte[] body = delivery.body();
    String pipeline = delivery.pipeline();
    String key = delivery.idempotencyKey();
    String orderingKey = delivery.orderingKey();
    if (!delivery.checkedJson()
        || !plain(pipeline)
        || !plain(key)
        || (orderingKey != null && !plain(orderingKey))
        || !verbatim(body)) {
      return null;
    }
    byte[] at = stamp(millis);
    int n =
        PIPELINE.length
            + pipeline.length()
            + IDEMPOTENCY_KEY.length
            + key.length()
            + (orderingKey == null
                ? NO_ORDERING_KEY.length + DELIVERED_AT_AFTER_NULL.length
                : ORDERING_KEY.length + orderingKey.length() + DELIVERED_AT_AFTER_KEY.length)
            + at.length
            + EVENT.length
            + body.length
            + 2;
    byte[] line = new byte[n];
    int i = put(line, 0, PIPELINE);
    i = putAscii(line, i, pipeline);
    i = put(line, i, IDEMPOTENCY_KEY);
    i = putAscii(line, i, key);
    if (orderingKey == null) {
      i = put(line, i, NO_ORDERING_KEY);
      i = put(line, i, DELIVERED_AT_AFTER_NULL);
    } else {
      i = put(line, i, ORDERING_KEY);
      i = putAscii(line, i, orderingKey);
      i = put(line, i, DELIVERED_AT_AFTER_KEY);
    }
    i = put(line, i, at);
    i = put(line, i, EVENT);
    i = put(line, i, body);
    line[i++] = '}';
    line[i] = '\n';
    return line;
  }

  private static int put(byte[] to, int at, byte[] b) {
    System.arraycopy(b, 0, to, at, b.length);
    return at + b.length;
  }

  @SuppressWarnings("deprecation") // String.getBytes(int, int, byte[], int): exact for ASCII
  private static int putAscii(byte[] to, int at, String s) {
    s.getBytes(0, s.length(), to, at);
    return at + s.length();
  }

  /** Whether Jackson writes the string as its characters between quotes: printable ASCII. */
  static boolean plain(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether parsing a well-formed JSON value and copying it with Jackson gives back its exact
   * bytes: no whitespace between tokens, no escape sequence in any string (Jackson rewrites an
   * escaped slash or a {@code u} escape of a plain character), no character outside the Basic
   * Multilingual Plane (Jackson writes one as the escapes of its two surrogates), no fraction or
   * exponent (Jackson may respell a number) and no {@code -0} (copied as {@code 0}). Other
   * non-ASCII text is copied as it is (Jackson writes it as the same UTF-8). Only meaningful for a
   * body the pipeline's check accepted.
   */
  static boolean verbatim(byte[] json) {
    boolean inString = false;
    byte previous = 0;
    for (byte b : json) {
      if (inString) {
        if (b == '"') {
          inString = false;
        } else if (b == '\\' || (b & 0xF8) == 0xF0) {
          return false; // an escape, or the first byte of a 4-byte UTF-8 character
        }
      } else {
        switch (b) {
          case '"' -> inString = true;
          case ' ', '\t', '\n', '\r', '.', 'E' -> {
            return false;
          }
          case 'e' -> {
            if (previous >= '0' && previous <= '9') {
              return false; // an exponent (true and false end in e after a letter)
            }
          }
          case '0' -> {
            if (previous == '-') {
              return false;
            }
          }
          default -> {}
        }
      }
      previous = b;
    }
    return !inString;
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
    try {
      writer.close();
    } catch (IOException e) {
      throw new IdemException("closing " + description + " failed: " + e, e);
    }
  }

  @Override
  public String toString() {
    return description;
  }

  private static final class StreamTarget implements GroupWriter.Output {
    private final PrintStream out;

    StreamTarget(PrintStream out) {
      this.out = out;
    }

    @Override
    public void write(byte[] lines, int length) throws IOException {
      out.write(lines, 0, length);
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

  /**
   * Appends groups of lines to a file. Called by one {@link GroupWriter} leader at a time, handed
   * over under the writer's lock, so its fields need no lock of their own.
   */
  static final class FileTarget implements GroupWriter.Output {
    /** Groups up to this size go through one reused direct buffer (the channel copies into one). */
    private static final int REUSED_BUFFER = 64 * 1024;

    private final FileChannel channel;
    private final Path file;
    private final boolean fsync;
    private @Nullable ByteBuffer reused;
    private boolean failed; // the last write threw: the file may end inside a line

    FileTarget(FileChannel channel, Path file, boolean fsync) {
      this.channel = channel;
      this.file = file;
      this.fsync = fsync;
    }

    /**
     * Writes a newline if the file is not empty and does not end with one.
     *
     * @return whether it did
     */
    boolean endUnfinishedLine() throws IOException {
      long size = channel.size();
      if (size == 0) {
        return false;
      }
      ByteBuffer last = ByteBuffer.allocate(1);
      try (FileChannel reading = FileChannel.open(file, StandardOpenOption.READ)) {
        if (reading.read(last, size - 1) != 1 || last.get(0) == '\n') {
          return false;
        }
      }
      ByteBuffer newline = ByteBuffer.wrap(new byte[] {'\n'});
      while (newline.hasRemaining()) {
        channel.write(newline);
      }
      return true;
    }

    @Override
    public void write(byte[] lines, int length) throws IOException {
      if (failed) {
        // A write that failed part-way (no space left, an I/O error) left part of a line; the
        // group it belonged to was failed, so its events are delivered again. Appended to as it
        // is, that part would swallow the first line of this group.
        if (endUnfinishedLine()) {
          LOG.warn(
              "deliver.file.path {}: an earlier write failed part-way; ended its unfinished line"
                  + " so the next event starts on its own line",
              file);
        }
        failed = false;
      }
      ByteBuffer buffer;
      if (length <= REUSED_BUFFER) {
        buffer = reused;
        if (buffer == null) {
          buffer = ByteBuffer.allocateDirect(REUSED_BUFFER);
          reused = buffer;
        }
        buffer.clear();
        buffer.put(lines, 0, length).flip();
      } else {
        buffer = ByteBuffer.wrap(lines, 0, length);
      }
      try {
        while (buffer.hasRemaining()) {
          channel.write(buffer);
        }
      } catch (IOException e) {
        failed = true;
        throw e;
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
