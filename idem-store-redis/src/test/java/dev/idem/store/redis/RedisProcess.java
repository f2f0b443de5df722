package dev.idem.store.redis;

import static org.awaitility.Awaitility.await;

import dev.idem.tck.ExternalService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * A private redis-server (or Sentinel) process on a free loopback port, for tests that stop,
 * restart or reconfigure a server: never the shared one on 6379.
 */
final class RedisProcess implements AutoCloseable {
  /** Processes still running when the JVM exits (a test crashed) are killed then. */
  private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> RUNNING.forEach(Process::destroyForcibly)));
  }

  private final Path dir;
  private final int port;
  private final List<String> extraArgs;
  private Process process;

  private RedisProcess(Path dir, int port, List<String> extraArgs) {
    this.dir = dir;
    this.port = port;
    this.extraArgs = extraArgs;
  }

  /**
   * Starts a redis-server with persistence off on a free port.
   *
   * @param dir a directory for its files
   * @param extraArgs more command-line options, e.g. {@code --requirepass pw}
   * @return the running server
   */
  static RedisProcess start(Path dir, String... extraArgs) throws IOException {
    return start(dir, freePort(), extraArgs);
  }

  /**
   * Starts a redis-server with persistence off on a given port.
   *
   * @param dir a directory for its files
   * @param port the port
   * @param extraArgs more command-line options
   * @return the running server
   */
  static RedisProcess start(Path dir, int port, String... extraArgs) throws IOException {
    requireInstalled();
    RedisProcess p = new RedisProcess(dir, port, List.of(extraArgs));
    p.startProcess();
    return p;
  }

  /** Skips the test (fails it under CI=true) when redis-server is not installed. */
  static void requireInstalled() {
    try {
      Process p = new ProcessBuilder("redis-server", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      if (p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0) {
        return;
      }
    } catch (IOException e) {
      // not installed: handled below
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    String message =
        "redis-server is not installed (these tests start private servers on free loopback"
            + " ports): install it, e.g. apt-get install redis-server";
    if (ExternalService.isCi()) {
      Assertions.fail("CI=true and " + message);
    }
    Assumptions.abort("skipped: " + message);
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    }
  }

  int port() {
    return port;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Starts the process again on the same port (after {@link #stop()}). */
  void startProcess() throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add("redis-server");
    cmd.addAll(
        List.of(
            "--port",
            Integer.toString(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            dir.toString(),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--logfile",
            dir.resolve("redis-" + port + ".log").toString()));
    cmd.addAll(extraArgs);
    process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    RUNNING.add(process);
    awaitListening(Duration.ofSeconds(20));
  }

  /** Starts a Sentinel that monitors {@code master} as {@code mymaster}. */
  static RedisProcess sentinel(Path dir, RedisProcess master) throws IOException {
    int port = freePort();
    Path conf = dir.resolve("sentinel-" + port + ".conf");
    Files.writeString(
        conf,
        "port "
            + port
            + "\nbind 127.0.0.1\ndir "
            + dir
            + "\nsentinel monitor mymaster 127.0.0.1 "
            + master.port()
            + " 1\n",
        StandardCharsets.UTF_8);
    RedisProcess p = new RedisProcess(dir, port, List.of());
    p.process =
        new ProcessBuilder("redis-server", conf.toString(), "--sentinel")
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("sentinel-" + port + ".log").toFile())
            .start();
    RUNNING.add(p.process);
    p.awaitListening(Duration.ofSeconds(20));
    return p;
  }

  private void awaitListening(Duration within) {
    Process started = process;
    await()
        .atMost(within)
        .pollInterval(Duration.ofMillis(20))
        .until(
            () -> {
              if (!started.isAlive()) {
                throw new IllegalStateException(
                    "redis-server on port " + port + " exited with " + started.exitValue());
              }
              try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return true;
              } catch (IOException e) {
                return false;
              }
            });
  }

  /** Stops the server (SIGTERM, then SIGKILL) and waits until it is gone. */
  void stop() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    RUNNING.remove(p);
    p.destroy();
    try {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Runs redis-cli against this server.
   *
   * @param args the command and its arguments
   * @return the output, trimmed
   */
  String cli(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", "" + port));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("redis-cli " + String.join(" ", args) + " failed: " + out);
    }
    return out;
  }

  @Override
  public void close() {
    stop();
  }
}
