package dev.idem.tck;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.UniqueId;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Prints one line per skipped test or container, with its reason, on the console of a Maven build:
 * {@code SKIPPED dev.idem.store.redis.RedisDedupStoreContractTest: Redis at 127.0.0.1:6379 is not
 * reachable; start it with ...}. Surefire only counts skipped tests on the console and keeps their
 * reasons in the XML reports, and a test that is skipped because a local service is down should say
 * what to start where one looks.
 *
 * <p>Registered through {@code META-INF/services}, so every module that tests with idem-store-tck
 * gets it. It writes to the process's own standard error rather than {@link System#err}: Surefire
 * (with {@code redirectTestOutputToFile}) sends {@code System.out} and {@code System.err} of tests
 * to report files, but shows a forked JVM's native standard error on the console.
 *
 * <p>A skipped container (an assumption in {@code @BeforeAll}, or a disabled class) is one line;
 * its tests are not reported one by one.
 */
public final class SkipReasonListener implements TestExecutionListener {
  private static final int MAX_REASON_CHARS = 500;

  private final PrintStream out;

  /** Prints to the process's standard error. */
  public SkipReasonListener() {
    this(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
  }

  /**
   * Prints to the given stream (for tests of this listener).
   *
   * @param out where the lines go
   */
  public SkipReasonListener(PrintStream out) {
    this.out = Objects.requireNonNull(out, "out");
  }

  @Override
  public void executionSkipped(TestIdentifier id, String reason) {
    print(id, reason);
  }

  @Override
  public void executionFinished(TestIdentifier id, TestExecutionResult result) {
    if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
      print(id, result.getThrowable().map(SkipReasonListener::reason).orElse("aborted"));
    }
  }

  private static String reason(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getName() : m;
  }

  private void print(TestIdentifier id, String reason) {
    String oneLine = reason.replaceAll("\\s+", " ").strip();
    if (oneLine.length() > MAX_REASON_CHARS) {
      oneLine = oneLine.substring(0, MAX_REASON_CHARS) + "...";
    }
    String line = "SKIPPED " + name(id) + ": " + oneLine;
    synchronized (out) {
      out.println(line);
    }
  }

  /**
   * The test's place, from its unique id: {@code Class$Nested.method()} (the concrete class, also
   * for a contract's nested checks), {@code [n]} for one invocation of a parameterized test; the
   * display name when the id has no class.
   */
  static String name(TestIdentifier id) {
    StringBuilder b = new StringBuilder();
    for (UniqueId.Segment segment : UniqueId.parse(id.getUniqueId()).getSegments()) {
      String type = segment.getType();
      String value = segment.getValue();
      switch (type) {
        case "class" -> b.append(value);
        case "nested-class" -> b.append('$').append(value);
        case "method", "test-template", "test-factory" -> b.append('.').append(value);
        case "test-template-invocation", "dynamic-test" -> b.append(" [").append(value).append(']');
        default -> {}
      }
    }
    return b.length() == 0 ? id.getDisplayName() : b.toString();
  }
}
