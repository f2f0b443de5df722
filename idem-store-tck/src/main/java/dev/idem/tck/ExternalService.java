package dev.idem.tck;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * A real server a test needs (Redis, PostgreSQL, ...), found through an environment variable with a
 * loopback default. When it does not answer, the test fails if {@code CI=true} and is skipped
 * otherwise, with a message saying what to start. Never a mock.
 *
 * @param name the server's name, e.g. {@code Redis}
 * @param envVar the environment variable holding its URL, e.g. {@code IDEM_REDIS_URL}
 * @param url the URL to use (the variable's value, or the default)
 * @param host the host to probe
 * @param port the port to probe
 * @param howToStart what to run to start it
 */
public record ExternalService(
    String name, String envVar, String url, String host, int port, String howToStart) {

  /**
   * Resolves a server from the environment and checks that it accepts connections.
   *
   * @param name the server's name
   * @param envVar the environment variable holding its URL
   * @param defaultUrl the URL when the variable is unset, e.g. {@code redis://127.0.0.1:6379}
   * @param defaultPort the port when the URL has none
   * @param howToStart the command that starts it, for the skip message
   * @return the server, reachable
   */
  public static ExternalService require(
      String name, String envVar, String defaultUrl, int defaultPort, String howToStart) {
    String url = System.getenv().getOrDefault(envVar, defaultUrl);
    URI uri = URI.create(url.startsWith("jdbc:") ? url.substring(5) : url);
    String host = uri.getHost() == null ? "127.0.0.1" : uri.getHost();
    int port = uri.getPort() < 0 ? defaultPort : uri.getPort();
    ExternalService service = new ExternalService(name, envVar, url, host, port, howToStart);
    service.checkReachable();
    return service;
  }

  private void checkReachable() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), 2_000);
    } catch (IOException e) {
      String message =
          name
              + " is not reachable at "
              + host
              + ":"
              + port
              + " ("
              + envVar
              + "="
              + url
              + "): "
              + e.getMessage()
              + ". Start it ("
              + howToStart
              + ") or point "
              + envVar
              + " at one.";
      if (isCi()) {
        Assertions.fail("CI=true and " + message);
      }
      Assumptions.abort("skipped: " + message);
    }
  }

  /**
   * Returns whether the tests run under CI, where a missing server is a failure.
   *
   * @return true if the environment variable {@code CI} is {@code true}
   */
  public static boolean isCi() {
    return "true".equalsIgnoreCase(System.getenv("CI"));
  }
}
