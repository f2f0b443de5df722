package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GroupWriterTest {
  private final ExecutorService pool = Executors.newFixedThreadPool(16);

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
  }

  /** An output that keeps what it was given, one entry per write call. */
  static final class Recording implements GroupWriter.Output {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    final List<Integer> writes = new ArrayList<>();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile IOException failNext;
    volatile Error errorNext;
    volatile boolean closed;
    final AtomicInteger concurrent = new AtomicInteger();
    volatile int mostConcurrent;

    @Override
    public void write(byte[] b, int length) throws IOException {
      int now = concurrent.incrementAndGet();
      mostConcurrent = Math.max(mostConcurrent, now);
      try {
        Error error = errorNext; // read before the gate: a held write is not the one to fail
        if (error != null) {
          errorNext = null;
          throw error;
        }
        gate.await();
        IOException f = failNext;
        if (f != null) {
          failNext = null;
          throw f;
        }
        synchronized (this) {
          bytes.write(b, 0, length);
          writes.add(length);
        }
      } catch (InterruptedException e) {
        throw new IOException(e);
      } finally {
        concurrent.decrementAndGet();
      }
    }

    synchronized String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }

    synchronized int writeCalls() {
      return writes.size();
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private static byte[] line(String s) {
    return (s + "\n").getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyRecordIsWrittenWholeOnceAndBeforeItsCallerReturns() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    List<Future<?>> calls = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int thread = t;
      calls.add(
          pool.submit(
              () -> {
                for (int i = 0; i < 2_000; i++) {
                  String record = "t" + thread + "-" + i + "-" + "x".repeat(i % 97);
                  assertThat(writer.write(line(record))).isTrue();
                  // Written when the call returns, not later
                  assertThat(out.text()).contains(record + "\n");
                }
                return null;
              }));
    }
    for (Future<?> f : calls) {
      f.get(120, TimeUnit.SECONDS);
    }

    List<String> lines = Arrays.asList(out.text().split("\n", -1));
    assertThat(lines.get(lines.size() - 1)).isEmpty(); // the text ends with a whole line
    List<String> records = lines.subList(0, lines.size() - 1);
    assertThat(records).hasSize(32_000).doesNotHaveDuplicates();
    Set<String> expected = new HashSet<>();
    for (int t = 0; t < 16; t++) {
      for (int i = 0; i < 2_000; i++) {
        expected.add("t" + t + "-" + i + "-" + "x".repeat(i % 97));
      }
    }
    assertThat(new HashSet<>(records)).isEqualTo(expected);
    // One leader at a time
    assertThat(out.mostConcurrent).isEqualTo(1);
  }

  @Test
  void recordsThatArriveDuringAWriteGoOutTogetherInTheNextOne() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    out.gate = new CountDownLatch(1);
    Future<Boolean> first = pool.submit(() -> writer.write(line("first")));
    await().atMost(Duration.ofSeconds(30)).until(() -> out.concurrent.get() == 1);

    // While the first write is held, ten more callers append
    List<Future<Boolean>> later = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      int n = i;
      later.add(pool.submit(() -> writer.write(line("later-" + n))));
    }
    int tenLines = 10 * line("later-0").length;
    await().atMost(Duration.ofSeconds(30)).until(() -> writer.pendingBytes() == tenLines);
    out.gate.countDown();

    assertThat(first.get(30, TimeUnit.SECONDS)).isTrue();
    for (Future<Boolean> f : later) {
      assertThat(f.get(30, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(out.text().split("\n")).hasSize(11);
    // Two write calls: the first record's, then the ten appended meanwhile, together
    assertThat(out.writeCalls()).isEqualTo(2);
  }

  @Test
  void aFailedWriteIsReportedToEveryCallerOfItsGroupAndTheNextGroupStillGoesOut() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    out.failNext = new IOException("No space left on device");

    assertThatThrownBy(() -> writer.write(line("lost")))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("No space left on device")
        .hasCauseInstanceOf(IOException.class);

    assertThat(writer.write(line("next"))).isTrue();
    assertThat(out.text()).isEqualTo("next\n");
  }

  @Test
  void aGroupWhoseWriteThrewAnErrorCountsAsFailedForEveryCallerInIt() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    out.gate = new CountDownLatch(1);
    Future<Boolean> first = pool.submit(() -> writer.write(line("first")));
    await().atMost(Duration.ofSeconds(30)).until(() -> out.concurrent.get() == 1);
    // Two callers append while the first write is held: they form the next group, whose write
    // throws an Error (not an IOException)
    Future<Boolean> a = pool.submit(() -> writer.write(line("a")));
    Future<Boolean> b = pool.submit(() -> writer.write(line("b")));
    await().atMost(Duration.ofSeconds(30)).until(() -> writer.pendingBytes() == 4);
    out.errorNext = new AssertionError("the disk driver blew up");
    out.gate.countDown();

    assertThat(first.get(30, TimeUnit.SECONDS)).isTrue();
    List<Throwable> failures = new ArrayList<>();
    for (Future<Boolean> f : List.of(a, b)) {
      try {
        f.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        failures.add(e.getCause());
      }
    }
    // Neither caller believes its record was written: the leader sees the Error, the other an
    // IOException saying the write did not complete
    assertThat(failures).hasSize(2);
    assertThat(failures)
        .anySatisfy(t -> assertThat(t).isInstanceOf(AssertionError.class))
        .anySatisfy(
            t ->
                assertThat(t)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("did not complete"));
    assertThat(out.text()).isEqualTo("first\n");
    // And the writer goes on
    assertThat(writer.write(line("after"))).isTrue();
    assertThat(out.text()).isEqualTo("first\nafter\n");
  }

  @Test
  void closeWaitsForAppendedRecordsThenRefusesNewOnes() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    out.gate = new CountDownLatch(1);
    Future<Boolean> held = pool.submit(() -> writer.write(line("held")));
    await().atMost(Duration.ofSeconds(30)).until(() -> out.concurrent.get() == 1);
    Future<Boolean> queued = pool.submit(() -> writer.write(line("queued")));
    await().atMost(Duration.ofSeconds(30)).until(() -> writer.pendingBytes() > 0);

    CompletableFuture<Void> closing =
        CompletableFuture.runAsync(
            () -> {
              try {
                writer.close();
              } catch (IOException e) {
                throw new RuntimeException(e);
              }
            },
            pool);
    // While a write still runs, close waits: the output stays open and close does not return
    await()
        .during(Duration.ofMillis(200))
        .atMost(Duration.ofSeconds(30))
        .until(() -> !out.closed && !closing.isDone());
    out.gate.countDown();

    closing.get(30, TimeUnit.SECONDS);
    assertThat(held.get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(queued.get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(out.text()).isEqualTo("held\nqueued\n");
    assertThat(out.closed).isTrue();
    assertThat(writer.write(line("too late"))).isFalse();
    assertThat(out.text()).doesNotContain("too late");
  }

  @Test
  void aRecordLargerThanTheBufferIsWrittenWhole() throws Exception {
    Recording out = new Recording();
    GroupWriter writer = new GroupWriter(out);
    String big = "y".repeat(3 * 1024 * 1024);
    assertThat(writer.write(line(big))).isTrue();
    assertThat(writer.write(line("small"))).isTrue();
    assertThat(out.text()).isEqualTo(big + "\nsmall\n");
  }
}
