package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.Ttl;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 §2: a stalled database is a {@link StoreUnavailableException}, never a hang. A table held
 * locked by a connection of the test, and a proxy that stops forwarding, each make reserve, commit
 * and the health check fail with "unavailable" (bounded by the store timeout). The tests work on
 * tables with a prefix of their own and drop only those.
 */
abstract class AbstractStallTest {
  /** Far above the store timeout under test: only there to fail instead of hanging forever. */
  private static final Duration HANG = Duration.ofSeconds(60);

  private static final Duration STORE_TIMEOUT = Duration.ofMillis(800);

  private final Scope scope = Scope.of("stall");
  String url;
  String prefix;

  abstract TestDb db();

  /** Takes a lock on the table that makes every other session's reads and writes of it wait. */
  abstract void lockTable(Connection c, String table) throws SQLException;

  /** Releases what {@link #lockTable} took. */
  abstract void unlockTables(Connection c) throws SQLException;

  @BeforeEach
  void names() {
    url = db().url();
    prefix = TestDb.uniquePrefix();
  }

  @AfterEach
  void drop() throws SQLException {
    TestDb.dropTables(url, prefix);
  }

  private JdbcDedupStore store(String jdbcUrl) {
    return JdbcDedupStore.builder(jdbcUrl)
        .tablePrefix(prefix)
        .timeout(STORE_TIMEOUT)
        .sweepInterval(Duration.ZERO)
        .poolSize(2)
        .build();
  }

  private ReserveRequest reserve(DedupKey key) {
    return new ReserveRequest(
        scope,
        key,
        null,
        ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE),
        System.currentTimeMillis(),
        30_000,
        new Ttl(3_600_000, Expiry.SLIDING));
  }

  /** Runs the call on another thread; fails the test if it has not ended within {@link #HANG}. */
  private static Throwable failureOf(Supplier<?> call) throws InterruptedException {
    CompletableFuture<?> f = CompletableFuture.supplyAsync(call);
    await().atMost(HANG).until(f::isDone);
    try {
      f.get();
      return new AssertionError("the call succeeded");
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  @Test
  void aTableHeldLockedMakesReserveAndHealthUnavailableNotHang() throws Exception {
    // Given a store whose keys table another session holds locked
    try (JdbcDedupStore store = store(url);
        Connection locker = TestDb.connect(url)) {
      store.reserve(reserve(TestDb.key("before")));
      lockTable(locker, prefix + "keys");
      try {
        // When a reserve and the health check run
        Throwable reserve = failureOf(() -> store.reserve(reserve(TestDb.key("during"))));
        Throwable health =
            failureOf(
                () -> {
                  store.checkHealth();
                  return null;
                });

        // Then both are "unavailable", and the reserve was rolled back by the server; the
        // message says it waited (a lock or a slow statement), not that the database is down
        assertThat(reserve)
            .isInstanceOf(StoreUnavailableException.class)
            .hasMessageContaining("retry later")
            .hasMessageNotContaining("up and reachable");
        assertThat(((StoreUnavailableException) reserve).outcomeUnknown()).isFalse();
        assertThat(health).isInstanceOf(StoreUnavailableException.class);
      } finally {
        unlockTables(locker);
      }

      // And once the lock is gone the store answers again, and the key was not reserved
      assertThat(store.reserve(reserve(TestDb.key("during"))))
          .isInstanceOf(ReserveResult.Acquired.class);
      store.checkHealth();
    }
  }

  @Test
  void aProxyThatStopsForwardingMakesEveryCallUnavailableNotHang() throws Exception {
    // Given a store that reaches the database through a proxy, with pooled connections open
    try (SilentProxy proxy = new SilentProxy("127.0.0.1", db().port());
        JdbcDedupStore store = store(viaPort(url, proxy.port()))) {
      assertThat(store.reserve(reserve(TestDb.key("before"))))
          .isInstanceOf(ReserveResult.Acquired.class);

      // When the proxy stops forwarding (connections stay open, new ones are accepted)
      proxy.goSilent();

      // Then reserve, inspect and the health check each fail as unavailable
      assertThat(failureOf(() -> store.reserve(reserve(TestDb.key("during")))))
          .isInstanceOf(StoreUnavailableException.class);
      assertThat(
              failureOf(
                  () -> store.inspect(scope, TestDb.key("before"), System.currentTimeMillis())))
          .isInstanceOf(StoreUnavailableException.class);
      assertThat(
              failureOf(
                  () -> {
                    store.checkHealth();
                    return null;
                  }))
          .isInstanceOf(StoreUnavailableException.class);
    }
  }

  /** Returns the URL with its port replaced. */
  static String viaPort(String jdbcUrl, int port) {
    String replaced = jdbcUrl.replaceFirst("//([^/:?]+)(:\\d+)?", "//127.0.0.1:" + port);
    assertThat(replaced).isNotEqualTo(jdbcUrl);
    return replaced;
  }
}
