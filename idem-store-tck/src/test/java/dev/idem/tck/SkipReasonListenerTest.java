package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.core.LauncherConfig;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/** Issue 8, section 6: a skipped check names its reason on the console. */
class SkipReasonListenerTest {

  /** Run only through the launcher below: one test skips itself, one runs. */
  static class OneSkipsFixture {
    @Test
    void needsRedis() {
      Assumptions.assumeTrue(false, "Redis at 127.0.0.1:6379 is not reachable;\nstart it");
    }

    @Test
    void runs() {}
  }

  /** Run only through the launcher below: the whole class skips in {@code @BeforeAll}. */
  static class ClassSkipsFixture {
    @BeforeAll
    static void server() {
      Assumptions.assumeTrue(false, "PostgreSQL is down");
    }

    @Test
    void a() {}

    @Test
    void b() {}
  }

  private static List<String> run(Class<?> fixture) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    Launcher launcher =
        LauncherFactory.create(
            LauncherConfig.builder().enableTestExecutionListenerAutoRegistration(false).build());
    launcher.execute(
        LauncherDiscoveryRequestBuilder.request().selectors(selectClass(fixture)).build(),
        new SkipReasonListener(out));
    return bytes.toString(StandardCharsets.UTF_8).lines().toList();
  }

  @Test
  void aSkippedTestIsOneLineWithItsNameAndReason() {
    assertThat(run(OneSkipsFixture.class))
        .containsExactly(
            "SKIPPED dev.idem.tck.SkipReasonListenerTest$OneSkipsFixture.needsRedis(): Assumption"
                + " failed: Redis at 127.0.0.1:6379 is not reachable; start it");
  }

  @Test
  void aSkippedClassIsOneLine() {
    assertThat(run(ClassSkipsFixture.class))
        .containsExactly(
            "SKIPPED dev.idem.tck.SkipReasonListenerTest$ClassSkipsFixture: Assumption failed:"
                + " PostgreSQL is down");
  }

  @Test
  void itIsRegisteredForEveryModuleThatTestsWithTheSuite() {
    assertThat(ServiceLoader.load(TestExecutionListener.class))
        .anyMatch(l -> l instanceof SkipReasonListener);
  }
}
