package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.ManualTimeSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonLinesSinkTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.parse("2026-03-01T12:00:00.250Z"));

  private static Delivery delivery(String key, String orderingKey, String body) {
    return new Delivery(
        "orders", key, orderingKey, body.getBytes(StandardCharsets.UTF_8), Map.of());
  }

  private static List<String> lines(Path file) throws Exception {
    return Files.readAllLines(file, StandardCharsets.UTF_8);
  }

  @Test
  void aLineLeftUnfinishedByAKilledProcessDoesNotSwallowTheNextEvent() throws Exception {
    // Given a file whose last line was cut by a kill in the middle of its write
    Path file = dir.resolve("out.jsonl");
    String whole =
        "{\"pipeline\":\"orders\",\"idempotency_key\":\"k-0\",\"ordering_key\":null,"
            + "\"delivered_at\":\"2026-03-01T12:00:00.250Z\",\"event\":{\"id\":0}}";
    String cut = "{\"pipeline\":\"orders\",\"idempotency_key\":\"k-";
    Files.writeString(file, whole + "\n" + cut, StandardCharsets.UTF_8);

    // When the sink is opened on it again and delivers an event
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      sink.deliver(delivery("k-1", null, "{\"id\":1}"));
    }

    // Then the cut line stays a line of its own and the event's line is whole
    List<String> lines = lines(file);
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).isEqualTo(whole);
    assertThat(lines.get(1)).isEqualTo(cut);
    assertThat(JSON.readTree(lines.get(2)).get("idempotency_key").asText()).isEqualTo("k-1");
  }

  @Test
  void aWriteThatFailsPartWayDoesNotSwallowTheFirstLineOfTheNextGroup() throws Exception {
    // Given a disk with room for only the first line and a bit of the second of a group
    Path file = dir.resolve("out.jsonl");
    SmallDisk disk =
        new SmallDisk(FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE));
    JsonLinesSink.FileTarget target = new JsonLinesSink.FileTarget(disk, file, false);
    byte[] group = "{\"n\":1}\n{\"n\":2}\n".getBytes(StandardCharsets.UTF_8);
    disk.room = 11;

    // When its write fails part-way, and the next group is written once there is room again
    assertThatThrownBy(() -> target.write(group, group.length))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("No space left");
    disk.room = Long.MAX_VALUE;
    byte[] next = "{\"n\":2}\n".getBytes(StandardCharsets.UTF_8);
    target.write(next, next.length);
    target.close();

    // Then the cut line stays a line of its own, and the next group's line is whole
    assertThat(lines(file)).containsExactly("{\"n\":1}", "{\"n", "{\"n\":2}");
  }

  /** A file channel on a disk that fills up: it writes {@code room} more bytes, then fails. */
  private static final class SmallDisk extends FileChannel {
    private final FileChannel file;
    volatile long room;

    SmallDisk(FileChannel file) {
      this.file = file;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      if (room <= 0) {
        throw new IOException("No space left on device");
      }
      ByteBuffer part = src.duplicate();
      part.limit(part.position() + (int) Math.min(part.remaining(), room));
      int n = file.write(part);
      src.position(src.position() + n);
      room -= n;
      return n;
    }

    @Override
    public long size() throws IOException {
      return file.size();
    }

    @Override
    public void force(boolean metaData) throws IOException {
      file.force(metaData);
    }

    @Override
    protected void implCloseChannel() throws IOException {
      file.close();
    }

    @Override
    public int read(ByteBuffer dst) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long position() {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileChannel position(long newPosition) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileChannel truncate(long size) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long transferTo(long position, long count, WritableByteChannel target) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long position, long count) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int read(ByteBuffer dst, long position) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int write(ByteBuffer src, long position) {
      throw new UnsupportedOperationException();
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long position, long size) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileLock lock(long position, long size, boolean shared) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileLock tryLock(long position, long size, boolean shared) {
      throw new UnsupportedOperationException();
    }
  }

  @Test
  void aFileThatEndsWithANewlineGetsNoEmptyLine() throws Exception {
    Path file = dir.resolve("out.jsonl");
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      sink.deliver(delivery("k-1", null, "{\"id\":1}"));
    }
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      sink.deliver(delivery("k-2", null, "{\"id\":2}"));
    }
    assertThat(lines(file)).hasSize(2).allSatisfy(l -> assertThat(JSON.readTree(l)).isNotNull());
  }

  @Test
  void writesOneLineWithTheEventEmbeddedAsJson() throws Exception {
    // Given a file sink under directories that do not exist yet
    Path file = dir.resolve("a/b/out.jsonl");
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      // When
      DeliveryOutcome outcome =
          sink.deliver(delivery("k-1", "cust-9", "{\"id\":1,\"tags\":[\"x\"]}"));

      // Then
      assertThat(outcome).isEqualTo(new DeliveryOutcome.Delivered(0, null, null));
      assertThat(sink.describe()).isEqualTo("file:" + file.toAbsolutePath());
    }
    assertThat(lines(file))
        .containsExactly(
            "{\"pipeline\":\"orders\",\"idempotency_key\":\"k-1\",\"ordering_key\":\"cust-9\","
                + "\"delivered_at\":\"2026-03-01T12:00:00.250Z\",\"event\":{\"id\":1,\"tags\":[\"x\"]}}");
  }

  @Test
  void aPrettyPrintedEventBecomesOneCompactLineAndANullOrderingKeyIsNull() throws Exception {
    Path file = dir.resolve("out.jsonl");
    try (Sink sink = JsonLinesSink.file(file, true, clock)) {
      sink.deliver(
          delivery("k-1", null, "{\n  \"a\" : \"line\\nbreak\",\r\n  \"b\" : [ 1, 2 ]\n}\n"));
    }

    List<String> lines = lines(file);
    assertThat(lines).hasSize(1);
    JsonNode line = JSON.readTree(lines.get(0));
    assertThat(line.get("ordering_key").isNull()).isTrue();
    assertThat(line.get("event").get("a").asText()).isEqualTo("line\nbreak");
    assertThat(line.get("event").toString()).isEqualTo("{\"a\":\"line\\nbreak\",\"b\":[1,2]}");
  }

  @Test
  void anEventThatIsNotJsonFailsForGoodAndWritesNothing() throws Exception {
    Path file = dir.resolve("out.jsonl");
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      for (String body : new String[] {"{\"a\":", "not json", "", "{} {}"}) {
        assertThat(sink.deliver(delivery("k", null, body)))
            .as(body)
            .isInstanceOfSatisfying(
                DeliveryOutcome.Failed.class,
                f -> {
                  assertThat(f.retryable()).isFalse();
                  assertThat(f.error()).contains("not JSON");
                });
      }
    }
    assertThat(Files.size(file)).isZero();
  }

  @Test
  void appendsToAnExistingFile() throws Exception {
    Path file = dir.resolve("out.jsonl");
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      sink.deliver(delivery("k-1", null, "1"));
    }
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      sink.deliver(delivery("k-2", null, "2"));
    }

    assertThat(lines(file)).hasSize(2);
    assertThat(JSON.readTree(lines(file).get(1)).get("idempotency_key").asText()).isEqualTo("k-2");
  }

  @Test
  void concurrentDeliveriesNeverInterleaveLines() throws Exception {
    // Given 8 threads writing 200 events each, some bodies large enough to need several writes
    Path file = dir.resolve("out.jsonl");
    String big = "\"" + "x".repeat(70_000) + "\"";
    int threads = 8;
    int each = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    try (Sink sink = JsonLinesSink.file(file, false, clock)) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(
            pool.submit(
                () -> {
                  start.await();
                  for (int i = 0; i < each; i++) {
                    String body = i % 50 == 0 ? "{\"big\":" + big + "}" : "{\"i\":" + i + "}";
                    assertThat(sink.deliver(delivery(thread + "-" + i, null, body)))
                        .isInstanceOf(DeliveryOutcome.Delivered.class);
                  }
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }

    // Then every line is whole JSON and every event is there once
    List<String> lines = lines(file);
    assertThat(lines).hasSize(threads * each);
    Set<String> keys = new HashSet<>();
    for (String line : lines) {
      keys.add(JSON.readTree(line).get("idempotency_key").asText());
    }
    assertThat(keys).hasSize(threads * each);
  }

  @Test
  void stdoutPrintsLinesAndIsFlushedNotClosed() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, false, StandardCharsets.UTF_8);
    Sink sink = JsonLinesSink.stream("stdout", out, clock);

    sink.deliver(delivery("k-1", null, "{\"a\":1}"));
    sink.close();

    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "{\"pipeline\":\"orders\",\"idempotency_key\":\"k-1\",\"ordering_key\":null,"
                + "\"delivered_at\":\"2026-03-01T12:00:00.250Z\",\"event\":{\"a\":1}}\n");
    out.println("still open");
    assertThat(out.checkError()).isFalse();
  }

  @Test
  void sinksStdoutWritesToSystemOut() {
    PrintStream original = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      Sink sink = Sinks.stdout();
      sink.deliver(delivery("k-1", null, "{}"));
      assertThat(sink.describe()).isEqualTo("stdout");
    } finally {
      System.setOut(original);
    }
    assertThat(bytes.toString(StandardCharsets.UTF_8)).contains("\"idempotency_key\":\"k-1\"");
  }

  @Test
  void aClosedSinkFailsRetryably() {
    Sink sink = Sinks.file(dir.resolve("out.jsonl"));
    sink.close();

    assertThat(sink.deliver(delivery("k", null, "{}")))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class, f -> assertThat(f.retryable()).isTrue());
  }
}
