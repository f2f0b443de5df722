package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 8, section 6: the build makes {@code idem-<version>.tar.gz} with {@code bin/idem}, the jar
 * and {@code examples/}, and it runs where only a Java runtime is installed. Runs in the
 * integration-test phase (failsafe), after the package phase made the archive.
 */
class DistributionIT {
  static final String VERSION = System.getProperty("idem.version", "0.1.0-SNAPSHOT");
  static final Path ARCHIVE =
      Path.of(System.getProperty("idem.dist", "target/idem-" + VERSION + ".tar.gz"));

  @TempDir Path dir;

  record Run(int code, String out, String err) {}

  Run run(Path cwd, Map<String, String> env, List<String> command) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    pb.redirectOutput(out.toFile());
    pb.redirectError(err.toFile());
    Process p = pb.start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(command + " did not finish in 120 s");
    }
    return new Run(
        p.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  /**
   * A PATH that has a java launcher and the few tools bin/idem needs (bash, dirname, readlink), and
   * nothing else: no JDK tools, no Maven, no source tree.
   */
  Path jreOnlyPath() throws IOException {
    Path bin = Files.createDirectories(dir.resolve("jre-only/bin"));
    Files.createSymbolicLink(
        bin.resolve("java"), Path.of(System.getProperty("java.home"), "bin", "java"));
    for (String tool : List.of("bash", "dirname", "readlink")) {
      Path found = which(tool);
      Files.createSymbolicLink(bin.resolve(tool), found);
    }
    return bin;
  }

  static Path which(String tool) {
    for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      Path p = Path.of(d, tool);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    throw new AssertionError(tool + " is not on the PATH of the test");
  }

  Path unpack() throws Exception {
    assertThat(ARCHIVE).as("the distribution archive, built in the package phase").exists();
    Path into = Files.createDirectories(dir.resolve("unpacked"));
    Run tar =
        run(
            into,
            Map.of("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin")),
            List.of("tar", "xzf", ARCHIVE.toAbsolutePath().toString()));
    assertThat(tar.code()).as("tar: %s", tar.err()).isZero();
    return into.resolve("idem-" + VERSION);
  }

  @Test
  void theArchiveHoldsTheLauncherTheJarAndTheExamples() throws Exception {
    Path home = unpack();

    assertThat(home.resolve("bin/idem")).isRegularFile();
    assertThat(Files.getPosixFilePermissions(home.resolve("bin/idem")))
        .contains(PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OTHERS_EXECUTE);
    assertThat(home.resolve("lib/idem.jar")).isRegularFile();
    assertThat(home.resolve("README.md")).isRegularFile();
    List<String> examples = new ArrayList<>();
    try (var s = Files.list(home.resolve("examples"))) {
      s.forEach(p -> examples.add(p.getFileName().toString()));
    }
    assertThat(examples).contains("quickstart.yaml", "github.yaml", "stripe.yaml");
  }

  @Test
  void binIdemChecksAnExampleWithOnlyAJavaRuntimeOnThePath() throws Exception {
    // given the unpacked archive somewhere else, and a PATH with java but no JDK, Maven or sources
    Path home = unpack();
    Path path = jreOnlyPath();
    Path work = Files.createDirectories(dir.resolve("work"));

    // when
    Run r =
        run(
            work,
            Map.of("PATH", path.toString(), "HOME", work.toString()),
            List.of(
                home.resolve("bin/idem").toString(),
                "check-config",
                home.resolve("examples/quickstart.yaml").toString()));

    // then the launcher found lib/idem.jar next to bin/ and java on the PATH
    assertThat(r.code()).as("exit code; stderr:\n%s", r.err()).isZero();
    assertThat(r.err()).contains("is valid (1 pipeline");
    assertThat(r.out()).contains("/hooks/orders");
  }
}
