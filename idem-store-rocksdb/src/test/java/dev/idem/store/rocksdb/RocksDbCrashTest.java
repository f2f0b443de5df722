package dev.idem.store.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.StoreException;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A child JVM runs a write storm against a store directory and is killed with SIGKILL in the middle
 * of it; the directory must open again with every key whose commit had returned still committed,
 * and every message appended with such a commit still in the outbox. Holds for every durability
 * mode, because a process crash keeps what the operating system already has (a power failure is
 * another matter: see {@link Durability}).
 *
 * <p>The default run kills after {@code idem.crash.keys} (1,500) acknowledged keys, once per mode;
 * the {@code soak} profile raises both ({@code ./mvnw -Psoak ...}).
 */
class RocksDbCrashTest {
  private static final Pattern LINE = Pattern.compile("[CO] [0-9a-f]{64}");
  private static final int KEYS_PER_ROUND = Integer.getInteger("idem.crash.keys", 1_500);
  private static final int ROUNDS = Integer.getInteger("idem.crash.rounds", 1);
  private static final int THREADS = 8;

  @TempDir Path dir;
  @TempDir Path logs;

  @ParameterizedTest
  @EnumSource(Durability.class)
  void everyKeyWhoseCommitReturnedSurvivesASigkillMidStorm(Durability durability) throws Exception {
    killStorms(durability, ROUNDS, 0);
  }

  /**
   * The store recycles WAL files ({@link Handles#RECYCLED_WAL_FILES}): a new WAL overwrites an
   * obsolete one in place, so behind the last record written lie records of the file's previous
   * life. A storm that compacts every 50 ms switches WAL files many times a second; it is killed
   * while it writes into a recycled file, and recovery (point in time) must open the directory and
   * keep every commit that returned, round after round on the same directory.
   */
  @ParameterizedTest
  @EnumSource(Durability.class)
  void everyKeyWhoseCommitReturnedSurvivesASigkillWhileTheWalIsARecycledFile(Durability durability)
      throws Exception {
    killStorms(durability, Math.max(3, ROUNDS), 50);
  }

  private void killStorms(Durability durability, int rounds, long compactEveryMillis)
      throws Exception {
    try (WalFiles wal = new WalFiles(dir)) {
      killStorms(durability, rounds, compactEveryMillis, wal);
    }
  }

  private void killStorms(Durability durability, int rounds, long compactEveryMillis, WalFiles wal)
      throws Exception {
    Set<DedupKey> committed = new HashSet<>();
    Set<DedupKey> enqueued = new HashSet<>();
    for (int round = 0; round < rounds; round++) {
      // given: a storm in a child JVM, killed once it has acknowledged enough commits (and, when
      // it compacts, once the WAL it writes is a file RocksDB took from its recycle list)
      Storm storm = Storm.start(dir, logs, durability, round, compactEveryMillis);
      int recycledBefore = wal.recycled();
      await()
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(5))
          .until(
              () ->
                  !storm.process.isAlive()
                      || storm.acknowledged() >= KEYS_PER_ROUND
                          && (compactEveryMillis == 0
                              || wal.recycled() >= recycledBefore + 2 && wal.newestIsRecycled()));
      assertThat(storm.process.isAlive())
          .as("the storm was still writing when killed; its stderr: %s", storm.stderr())
          .isTrue();

      // when
      storm.process.destroyForcibly();
      assertThat(storm.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      List<String> lines = storm.drain();

      // then: the kill was a SIGKILL (exit 128 + 9), and the directory opens with every key
      assertThat(storm.process.exitValue()).isEqualTo(137);
      for (String line : lines) {
        DedupKey k = DedupKey.parseHex(line.substring(2));
        committed.add(k);
        if (line.charAt(0) == 'O') {
          enqueued.add(k);
        }
      }
      assertThat(committed.size()).isGreaterThanOrEqualTo(KEYS_PER_ROUND * (round + 1));
      try (RocksDbDedupStore store =
          RocksDbDedupStore.builder(dir)
              .durability(durability)
              .sweepInterval(Duration.ZERO)
              .build()) {
        long now = System.currentTimeMillis();
        List<DedupKey> lost = new ArrayList<>();
        for (DedupKey k : committed) {
          if (!(store.inspect(CrashStorm.SCOPE, k, now) instanceof KeyState.Committed)) {
            lost.add(k);
          }
        }
        assertThat(lost).as("keys whose commit had returned, after round %d", round).isEmpty();
        Set<DedupKey> inOutbox = new HashSet<>();
        // A 1 ms claim hides each entry for this pass only; the next round sees them all again.
        for (List<OutboxRecord> batch = store.claim(CrashStorm.QUEUE, 10_000, now, 1);
            !batch.isEmpty();
            batch = store.claim(CrashStorm.QUEUE, 10_000, now, 1)) {
          batch.forEach(r -> inOutbox.add(r.key()));
        }
        // Entries appended by commits that never returned may be there too: that is allowed.
        assertThat(inOutbox).as("messages appended with a returned commit").containsAll(enqueued);
        // The keys each writer had in flight at the kill (the first it had not reported, and the
        // next, as its last line may be torn) are free at once: reservations die with the process.
        for (int t = 0; t < THREADS; t++) {
          long i = 0;
          while (committed.contains(CrashStorm.key(round, t, i))) {
            i++;
          }
          for (long j = i; j < i + 2; j++) {
            DedupKey k = CrashStorm.key(round, t, j);
            ReserveResult retry =
                store.reserve(
                    new ReserveRequest(CrashStorm.SCOPE, k, null, -1 - j, now, 60_000, Ttl.NONE));
            assertThat(retry)
                .as("the retry of writer %d's key %d after the restart", t, j)
                .isInstanceOfAny(ReserveResult.Acquired.class, ReserveResult.Duplicate.class);
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Durability.class)
  void reservationsHeldAtASigkillAreFreeAtOnceAfterTheRestart(Durability durability)
      throws Exception {
    // given: a child JVM holding reservations with a five-minute lease, its other keys committed
    int pairs = 200;
    Path stderr = Files.createTempFile(logs, "reservation-holder", ".err");
    Process child =
        new ProcessBuilder(
                javaBinary(),
                "-Xmx128m",
                "-cp",
                System.getProperty("java.class.path"),
                ReservationHolder.class.getName(),
                dir.toString(),
                durability.name(),
                Integer.toString(pairs))
            .redirectError(stderr.toFile())
            .start();
    ConcurrentLinkedQueue<String> lines = readLines(child);
    try {
      await().atMost(Duration.ofMinutes(2)).until(() -> lines.contains("HELD") || !child.isAlive());
      assertThat(lines).as("the holder's stderr: %s", Files.readString(stderr)).contains("HELD");
    } finally {
      // when
      child.destroyForcibly();
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(child.exitValue()).isEqualTo(137);

    // then: well within the dead holder's lease, every key it held is absent and acquired at once,
    // and every key it committed is a duplicate
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(durability)
            .sweepInterval(Duration.ZERO)
            .build()) {
      long now = System.currentTimeMillis();
      List<String> wrong = new ArrayList<>();
      for (long i = 0; i < 2L * pairs; i++) {
        DedupKey k = ReservationHolder.key(i);
        KeyState state = store.inspect(ReservationHolder.SCOPE, k, now);
        ReserveResult retry =
            store.reserve(
                new ReserveRequest(
                    ReservationHolder.SCOPE, k, null, 1_000_000 + i, now, 60_000, Ttl.NONE));
        boolean ok =
            i % 2 == 0
                ? state instanceof KeyState.Committed && retry instanceof ReserveResult.Duplicate
                : state.equals(KeyState.ABSENT)
                    && retry.equals(
                        new ReserveResult.Acquired(
                            1_000_000 + i, now + 60_000, ReserveResult.Replaced.NOTHING));
        if (!ok) {
          wrong.add(i + ": " + state + " / " + retry);
        }
      }
      assertThat(wrong).as("keys answered otherwise than the restart allows").isEmpty();
    }
  }

  /**
   * An unsynced write (here the sliding refreshes of duplicates) reaches the operating system at
   * once in every mode, so a SIGKILL (a process crash, not a power failure) never takes it back: a
   * lost refresh would end a key's window early, and a duplicate after it would be acted on again.
   * The child also commits one more key after the refreshes, so under group commit the refreshes
   * are synced too. (A WAL flushed by hand, {@code manual_wal_flush}, would keep them in RocksDB's
   * buffer until the next group and fail this test without that last commit; the store does not use
   * it for that reason.)
   */
  @ParameterizedTest
  @EnumSource(Durability.class)
  void refreshesMadeBeforeACommitThatReturnedSurviveASigkill(Durability durability)
      throws Exception {
    // given: a child JVM that refreshed 500 keys' windows, then committed one more key
    int keys = 500;
    Path stderr = Files.createTempFile(logs, "refresh-then-commit", ".err");
    Process child =
        new ProcessBuilder(
                javaBinary(),
                "-Xmx128m",
                "-cp",
                System.getProperty("java.class.path"),
                RefreshThenCommit.class.getName(),
                dir.toString(),
                durability.name(),
                Integer.toString(keys))
            .redirectError(stderr.toFile())
            .start();
    ConcurrentLinkedQueue<String> lines = readLines(child);
    try {
      await().atMost(Duration.ofMinutes(2)).until(() -> lines.contains("DONE") || !child.isAlive());
      assertThat(lines).as("the child's stderr: %s", Files.readString(stderr)).contains("DONE");
    } finally {
      // when
      child.destroyForcibly();
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(child.exitValue()).isEqualTo(137);

    // then: after the old window's end (T0 + 60 s) every key is still committed, to T1 + 60 s
    try (RocksDbDedupStore store =
        RocksDbDedupStore.builder(dir)
            .durability(durability)
            .sweepInterval(Duration.ZERO)
            .build()) {
      long after = RefreshThenCommit.T0 + 60_000 + 1;
      List<String> wrong = new ArrayList<>();
      for (long i = -1; i < keys; i++) {
        KeyState state = store.inspect(RefreshThenCommit.SCOPE, RefreshThenCommit.key(i), after);
        if (!(state instanceof KeyState.Committed c)
            || c.expiresAtMillis() != RefreshThenCommit.T1 + 60_000) {
          wrong.add(i + ": " + state);
        }
      }
      assertThat(wrong).as("keys whose refresh was lost").isEmpty();
    }
  }

  @Test
  void aDirectoryOpenInAnotherProcessIsRefusedWithTheFix() throws Exception {
    // given: a storm in a child JVM holding the directory
    Storm storm = Storm.start(dir, logs, Durability.OS_BUFFERED, 0);
    try {
      await().atMost(Duration.ofMinutes(1)).until(() -> storm.lines.contains("READY"));

      // when / then
      assertThatThrownBy(() -> RocksDbDedupStore.builder(dir).build())
          .isInstanceOf(StoreException.class)
          .hasMessageContaining(dir.toAbsolutePath().toString())
          .hasMessageContaining("already open")
          .hasMessageContaining("store.path");
    } finally {
      storm.process.destroyForcibly();
      storm.process.waitFor(60, TimeUnit.SECONDS);
    }
  }

  private static String javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** Collects a child's stdout lines on a daemon thread until its pipe closes. */
  private static ConcurrentLinkedQueue<String> readLines(Process process) {
    ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  lines.add(line);
                }
              } catch (java.io.IOException e) {
                // The pipe closes when the child dies; what was read is what counts.
              }
            },
            "crash-test-reader");
    reader.setDaemon(true);
    reader.start();
    return lines;
  }

  /** A running child storm and the lines it printed. */
  private static final class Storm {
    final Process process;
    final Path stderrFile;
    final ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
    final Thread reader;

    private Storm(Process process, Path stderrFile) {
      this.process = process;
      this.stderrFile = stderrFile;
      this.reader =
          new Thread(
              () -> {
                try (BufferedReader in =
                    new BufferedReader(
                        new InputStreamReader(
                            process.getInputStream(), StandardCharsets.US_ASCII))) {
                  for (String line = in.readLine(); line != null; line = in.readLine()) {
                    lines.add(line);
                  }
                } catch (java.io.IOException e) {
                  // The pipe closes when the child dies; what was read is what counts.
                }
              },
              "crash-storm-reader");
      reader.setDaemon(true);
      reader.start();
    }

    static Storm start(Path dir, Path logs, Durability durability, int round) throws Exception {
      return start(dir, logs, durability, round, 0);
    }

    static Storm start(Path dir, Path logs, Durability durability, int round, long compactEvery)
        throws Exception {
      Path stderr = Files.createTempFile(logs, "crash-storm", ".err");
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      Process p =
          new ProcessBuilder(
                  java,
                  "-Xmx256m",
                  "-cp",
                  System.getProperty("java.class.path"),
                  CrashStorm.class.getName(),
                  dir.toString(),
                  durability.name(),
                  Integer.toString(THREADS),
                  Integer.toString(round),
                  Long.toString(compactEvery))
              .redirectError(stderr.toFile())
              .start();
      return new Storm(p, stderr);
    }

    long acknowledged() {
      return lines.stream().filter(l -> LINE.matcher(l).matches()).count();
    }

    /** Waits for the pipe to close and returns the complete lines (a torn last line is not one). */
    List<String> drain() throws InterruptedException {
      reader.join(TimeUnit.SECONDS.toMillis(30));
      List<String> out = new ArrayList<>();
      for (String l : lines) {
        if (LINE.matcher(l).matches()) {
          out.add(l);
        }
      }
      return out;
    }

    String stderr() throws java.io.IOException {
      return Files.readString(stderrFile);
    }
  }

  /**
   * Watches the WAL files ({@code NNNNNN.log}) of a directory. RocksDB recycles a WAL by renaming
   * the obsolete file to the new log number, so a recycled WAL is a new name on the inode of an
   * earlier one. Every WAL seen is held open, so that a deleted one's inode cannot be handed to a
   * new file meanwhile: an inode seen again under a new name was renamed, not reused.
   */
  private static final class WalFiles implements AutoCloseable {
    private final Path dir;
    private final Map<Object, String> nameByInode = new HashMap<>();
    private final Set<String> seen = new HashSet<>();
    private final Set<String> recycledNames = new HashSet<>();
    private final List<FileChannel> held = new ArrayList<>();
    private @Nullable String newest;

    WalFiles(Path dir) {
      this.dir = dir;
    }

    /** How many WAL files seen so far were recycled ones. */
    synchronized int recycled() throws IOException {
      scan();
      return recycledNames.size();
    }

    /** Whether the newest WAL file is a recycled one. */
    synchronized boolean newestIsRecycled() throws IOException {
      scan();
      return newest != null && recycledNames.contains(newest);
    }

    private void scan() throws IOException {
      List<Path> logs;
      try (Stream<Path> files = Files.list(dir)) {
        logs = files.filter(f -> f.getFileName().toString().endsWith(".log")).sorted().toList();
      }
      for (Path log : logs) {
        String name = log.getFileName().toString();
        newest = name;
        if (!seen.add(name)) {
          continue;
        }
        try {
          held.add(FileChannel.open(log, StandardOpenOption.READ));
          Object inode = Files.getAttribute(log, "unix:ino");
          String before = nameByInode.put(inode, name);
          if (before != null) {
            recycledNames.add(name);
          }
        } catch (NoSuchFileException e) {
          // renamed or deleted between the listing and now
        }
      }
    }

    @Override
    public synchronized void close() throws IOException {
      for (FileChannel c : held) {
        c.close();
      }
      held.clear();
    }
  }
}
