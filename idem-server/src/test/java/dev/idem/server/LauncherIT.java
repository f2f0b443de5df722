package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.server.support.Http;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service as users start it: bin/idem with the built jar, in its own JVM. Runs in the
 * integration-test phase (failsafe), after the shade plugin built target/idem.jar.
 */
class LauncherIT {
  static final Path LAUNCHER = Path.of(System.getProperty("idem.launcher", "../bin/idem"));
  static final Path JAR = Path.of(System.getProperty("idem.jar", "target/idem.jar"));

  @TempDir Path dir;

  Process idem(Map<String, String> env, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(LAUNCHER.toAbsolutePath().toString());
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile());
    pb.environment().remove("IDEM_JAR");
    pb.environment().putAll(env);
    pb.redirectOutput(dir.resolve("stdout.txt").toFile());
    pb.redirectError(dir.resolve("stderr.txt").toFile());
    return pb.start();
  }

  String out() throws IOException {
    return Files.readString(dir.resolve("stdout.txt"));
  }

  String err() throws IOException {
    return Files.readString(dir.resolve("stderr.txt"));
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void theLauncherRunsTheServiceUntilSigtermAndItKeepsItsKeysAcrossARestart() throws Exception {
    assertThat(JAR).as("the shaded jar, built in the package phase").exists();
    int port = freePort();
    Path config = dir.resolve("idem.yaml");
    Files.writeString(
        config,
        """
        server: { host: 127.0.0.1, port: %d, shutdown_timeout: 5s }
        store: { type: rocksdb, path: ./data }
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
        """
            .formatted(port));
    Http http = new Http(URI.create("http://127.0.0.1:" + port));

    // given the service started by the launcher, with JAVA_OPTS passed to its JVM
    Process first =
        idem(
            Map.of("JAVA_OPTS", "-Xmx256m -Didem.test=launcher"), "serve", "--config", "idem.yaml");
    awaitUp(http, first);
    HttpResponse<String> accepted = http.post("/hooks/orders", "{\"id\":\"L-1\",\"n\":1}");
    HttpResponse<String> duplicate = http.post("/hooks/orders", "{\"id\":\"L-1\",\"n\":1}");

    // when it is stopped with SIGTERM and started again on the same data directory
    first.destroy();
    assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
    String firstOut = out();
    String firstErr = err();
    Process second = idem(Map.of(), "serve", "--config", "idem.yaml");
    try {
      awaitUp(http, second);
      HttpResponse<String> afterRestart = http.post("/hooks/orders", "{\"id\":\"L-1\",\"n\":1}");

      // then the event was delivered once, and is still a duplicate after the restart
      assertThat(accepted.statusCode()).isEqualTo(202);
      assertThat(duplicate.statusCode()).isEqualTo(200);
      assertThat(afterRestart.statusCode()).isEqualTo(200);
      assertThat(firstOut.lines().filter(l -> l.contains("L-1"))).hasSize(1);
      assertThat(firstErr)
          .contains("idem listening on http://127.0.0.1:" + port)
          .contains("idem stopped");
    } finally {
      second.destroy();
      second.waitFor(30, TimeUnit.SECONDS);
    }
    assertThat(out()).doesNotContain("L-1");
  }

  static void awaitUp(Http http, Process p) {
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(200))
        .ignoreExceptions()
        .until(
            () -> {
              if (!p.isAlive()) {
                throw new AssertionError("idem exited with " + p.exitValue());
              }
              return http.get("/health").statusCode() == 200;
            });
  }

  @Test
  void checkConfigValidatesTheQuickstartExample() throws Exception {
    Path quickstart = Path.of("..", "examples", "quickstart.yaml").toAbsolutePath();

    Process p = idem(Map.of(), "check-config", quickstart.toString());

    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(err()).isZero();
    assertThat(out()).contains("id: orders").contains("type: rocksdb");
  }

  @Test
  void withoutTheJarTheLauncherSaysWhichCommandBuildsIt() throws Exception {
    Process p = idem(Map.of("IDEM_JAR", dir.resolve("missing.jar").toString()), "--version");

    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(127);
    assertThat(err())
        .contains("is not built")
        .contains("./mvnw -B -pl idem-server -am package -DskipTests");
  }

  @Test
  void aBadJavaHomeIsReported() throws Exception {
    Process p = idem(Map.of("JAVA_HOME", dir.resolve("no-jdk").toString()), "--version");

    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(127);
    assertThat(err()).contains("JAVA_HOME");
  }
}
