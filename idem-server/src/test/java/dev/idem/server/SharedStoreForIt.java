package dev.idem.server;

import dev.idem.tck.ExternalService;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A store that several {@code idem serve} processes of one integration test share, private to the
 * test run: a redis-server the test starts on a free port, or a database of its own on the local
 * PostgreSQL or MariaDB (found through {@code IDEM_PG_URL} / {@code IDEM_MARIADB_URL}, as in the
 * JDBC store's tests), created at the start and dropped at {@link #close()}.
 *
 * <p>A missing redis-server or an unreachable database skips the test with what to start, and fails
 * it under {@code CI=true}.
 */
abstract class SharedStoreForIt implements AutoCloseable {

  /** The kinds, as the parameter of a test that runs on each. */
  enum Kind {
    REDIS,
    POSTGRESQL,
    MARIADB
  }

  /**
   * Opens a private store of a kind.
   *
   * @param kind the kind
   * @param logs where a started server writes its log
   * @return the store, ready
   */
  static SharedStoreForIt open(Kind kind, Path logs) throws Exception {
    return switch (kind) {
      case REDIS -> new Redis(logs);
      case POSTGRESQL ->
          new Database(
              ExternalService.require(
                  "PostgreSQL",
                  "IDEM_PG_URL",
                  "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
                  5432,
                  "pg_ctlcluster 15 main start"),
              // FORCE: a killed instance's connections may linger until the server notices
              "DROP DATABASE IF EXISTS %s WITH (FORCE)");
      case MARIADB ->
          new Database(
              ExternalService.require(
                  "MariaDB",
                  "IDEM_MARIADB_URL",
                  "jdbc:mariadb://127.0.0.1:3306/test?user=root",
                  3306,
                  "service mariadb start"),
              "DROP DATABASE IF EXISTS %s");
    };
  }

  /**
   * Returns the {@code store:} map of the instances' YAML.
   *
   * @param instance the instance's number (its {@code instance_id} where the store has one)
   */
  abstract String yaml(int instance);

  @Override
  public abstract void close() throws Exception;

  private static final class Redis extends SharedStoreForIt {
    private final Process server;
    private final int port;

    Redis(Path logs) throws IOException {
      boolean installed = installed("redis-server");
      if (!installed && ExternalService.isCi()) {
        throw new AssertionError(
            "redis-server is not installed; install it (apt-get install redis)");
      }
      Assumptions.assumeTrue(
          installed, "redis-server is not installed; install it to run this test");
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      server =
          new ProcessBuilder(
                  "redis-server",
                  "--port",
                  Integer.toString(port),
                  "--bind",
                  "127.0.0.1",
                  "--save",
                  "",
                  "--appendonly",
                  "no")
              .redirectOutput(logs.resolve("redis.log").toFile())
              .redirectErrorStream(true)
              .start();
    }

    @Override
    String yaml(int instance) {
      return "{ type: redis, url: \"redis://127.0.0.1:" + port + "\", prefix: \"it:\" }";
    }

    @Override
    public void close() throws InterruptedException {
      server.destroyForcibly();
      server.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static final class Database extends SharedStoreForIt {
    private final String adminUrl;
    private final String url;
    private final String name;
    private final String drop;

    Database(ExternalService server, String drop) throws SQLException {
      this.adminUrl = server.url();
      this.drop = drop;
      byte[] b = new byte[5];
      ThreadLocalRandom.current().nextBytes(b);
      this.name = "idem_it_" + HexFormat.of().formatHex(b);
      this.url = withDatabase(adminUrl, name);
      execute("CREATE DATABASE " + name);
    }

    @Override
    String yaml(int instance) {
      // A stable instance id per instance, so that a restarted one releases what it had claimed.
      return "{ type: jdbc, url: \"" + url + "\", instance_id: \"it-" + instance + "\" }";
    }

    @Override
    public void close() throws SQLException {
      execute(drop.formatted(name));
    }

    private void execute(String sql) throws SQLException {
      try (Connection c = DriverManager.getConnection(adminUrl);
          Statement st = c.createStatement()) {
        st.execute(sql);
      }
    }

    /** The JDBC URL with its database (the path after host:port) replaced. */
    static String withDatabase(String url, String database) {
      int hostStart = url.indexOf("//");
      if (hostStart < 0) {
        throw new IllegalArgumentException("a JDBC URL with //host:port/database, got " + url);
      }
      int pathStart = url.indexOf('/', hostStart + 2);
      int query = url.indexOf('?', hostStart + 2);
      if (pathStart < 0 || (query >= 0 && query < pathStart)) {
        return url.substring(0, query < 0 ? url.length() : query)
            + "/"
            + database
            + (query < 0 ? "" : url.substring(query));
      }
      int pathEnd = query < 0 ? url.length() : query;
      return url.substring(0, pathStart + 1) + database + url.substring(pathEnd);
    }
  }

  static boolean installed(String command) {
    try {
      return new ProcessBuilder("sh", "-c", "command -v " + command).start().waitFor() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
