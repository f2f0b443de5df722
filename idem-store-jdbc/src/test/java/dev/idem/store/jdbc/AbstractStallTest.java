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
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
    return reserve(key, 30_000);
  }

  private ReserveRequest reserve(DedupKey key, long leaseMillis) {
    return new ReserveRequest(
        scope,
        key,
        null,
        ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE),
        System.currentTimeMillis(),
        leaseMillis,
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

  @Test
  void aReserveWhoseAnswerIsLostIsUndoneLongBeforeItsLeaseEnds() throws Exception {
    long tenMinutes = 600_000;
    try (SilentProxy proxy = new SilentProxy("127.0.0.1", db().port());
        JdbcDedupStore store = store(viaPort(url, proxy.port()))) {
      ReserveRequest lost = null;
      // (A pooled connection idle for more than half a second is validated before use, and with
      // the answers dropped that check fails before the reserve is sent: its outcome is then
      // known. So the proxy starts dropping answers right after a call, and the test tries again
      // in the rare case the machine paused in between.)
      for (int attempt = 0; attempt < 3 && lost == null; attempt++) {
        proxy.heal();
        await()
            .atMost(HANG)
            .ignoreExceptions()
            .until(() -> store.reserve(reserve(TestDb.key("probe"))) != null);
        // Given a reserve that reaches the database, whose answer never comes back
        proxy.dropAnswers();
        ReserveRequest r = reserve(TestDb.key("lost-" + attempt), tenMinutes);
        Throwable failure = failureOf(() -> store.reserve(r));
        assertThat(failure).isInstanceOf(StoreUnavailableException.class);
        if (((StoreUnavailableException) failure).outcomeUnknown()) {
          lost = r;
        }
      }
      assertThat(lost).as("a reserve failed with an unknown outcome").isNotNull();
      ReserveRequest theLost = lost;
      // so its row is in the table, though nobody holds that reservation
      assertThat(rowsWithToken(theLost)).isEqualTo(1);

      // When the network heals
      proxy.heal();

      // Then the store removes that row by its token, long before the ten-minute lease ends,
      // and the key can be reserved again
      await().atMost(Duration.ofSeconds(30)).until(() -> rowsWithToken(theLost) == 0);
      assertThat(store.reserve(reserve(theLost.key()))).isInstanceOf(ReserveResult.Acquired.class);
    }
  }

  /**
   * Counts the keys table's rows that carry the request's token (read directly, not via the store).
   */
  private long rowsWithToken(ReserveRequest r) throws SQLException {
    try (Connection c = TestDb.connect(url);
        PreparedStatement ps =
            c.prepareStatement("SELECT COUNT(*) FROM " + prefix + "keys WHERE token = ?")) {
      ps.setLong(1, r.token());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Returns the URL with its port replaced. */
  static String viaPort(String jdbcUrl, int port) {
    String replaced = jdbcUrl.replaceFirst("//([^/:?]+)(:\\d+)?", "//127.0.0.1:" + port);
    assertThat(replaced).isNotEqualTo(jdbcUrl);
    return replaced;
  }
}
