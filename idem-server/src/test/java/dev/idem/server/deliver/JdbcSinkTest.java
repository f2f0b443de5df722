package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.tck.ExternalService;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class JdbcSinkTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The databases the sink supports; each test gets a table of its own, dropped afterwards. */
  enum Db {
    H2,
    POSTGRESQL,
    MARIADB;

    String url() {
      return switch (this) {
        case H2 ->
            "jdbc:h2:mem:sink_"
                + UUID.randomUUID().toString().replace("-", "")
                + ";DB_CLOSE_DELAY=-1";
        case POSTGRESQL ->
            ExternalService.require(
                    "PostgreSQL",
                    "IDEM_PG_URL",
                    "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
                    5432,
                    "pg_ctlcluster 15 main start")
                .url();
        case MARIADB ->
            ExternalService.require(
                    "MariaDB",
                    "IDEM_MARIADB_URL",
                    "jdbc:mariadb://127.0.0.1:3306/test?user=root",
                    3306,
                    "service mariadb start")
                .url();
      };
    }

    /** SQL reading one top-level JSON field of the payload as text. */
    String jsonField(String field) {
      return switch (this) {
        case H2 -> "payload";
        case POSTGRESQL -> "payload->>'" + field + "'";
        case MARIADB -> "JSON_VALUE(payload, '$." + field + "')";
      };
    }
  }

  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.parse("2026-05-04T10:15:30.123Z"));
  private final List<Runnable> cleanups = new ArrayList<>();

  @AfterEach
  void cleanUp() {
    for (Runnable r : cleanups) {
      r.run();
    }
  }

  private String table() {
    return "idem_sink_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  private JdbcSink sink(String url, String table) {
    JdbcSink sink = new JdbcSink(new JdbcSinkSettings(url, table, null, null), clock);
    cleanups.add(
        () -> {
          sink.close();
          try (Connection c = DriverManager.getConnection(url);
              Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + table);
          } catch (Exception e) {
            throw new AssertionError("could not drop " + table, e);
          }
        });
    return sink;
  }

  private static Delivery delivery(String key, String orderingKey, String body) {
    return new Delivery(
        "orders", key, orderingKey, body.getBytes(StandardCharsets.UTF_8), Map.of());
  }

  private static List<List<String>> rows(String url, String sql) throws Exception {
    List<List<String>> rows = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      int columns = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        List<String> row = new ArrayList<>();
        for (int i = 1; i <= columns; i++) {
          row.add(rs.getString(i));
        }
        rows.add(row);
      }
    }
    return rows;
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  void createsTheTableAndInsertsTheEventAsJson(Db db) throws Exception {
    // Given a table that does not exist yet
    String url = db.url();
    String table = table();
    JdbcSink sink = sink(url, table);

    // When
    DeliveryOutcome outcome =
        sink.deliver(delivery("key-1", "cust-7", "{\"id\":\"o-1\",\"total\":29.99}"));

    // Then one row with every column, the payload stored as JSON
    assertThat(outcome).isEqualTo(new DeliveryOutcome.Delivered(0, null, null));
    List<List<String>> rows =
        rows(
            url,
            "SELECT idempotency_key, pipeline, ordering_key, "
                + db.jsonField("id")
                + " FROM "
                + table);
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).subList(0, 3)).containsExactly("key-1", "orders", "cust-7");
    if (db == Db.H2) {
      assertThat(JSON.readTree(rows.get(0).get(3)).get("id").asText()).isEqualTo("o-1");
    } else {
      assertThat(rows.get(0).get(3)).isEqualTo("o-1");
    }
    assertThat(sink.describe()).startsWith("jdbc:" + table + "@");
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  void storesTheDeliveryTimeInUtc(Db db) throws Exception {
    String url = db.url();
    String table = table();
    JdbcSink sink = sink(url, table);

    sink.deliver(delivery("key-1", null, "{}"));

    String sql =
        switch (db) {
          case POSTGRESQL ->
              "SELECT to_char(delivered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') FROM "
                  + table;
          case MARIADB -> "SELECT DATE_FORMAT(delivered_at, '%Y-%m-%d %H:%i:%s.%f') FROM " + table;
          case H2 ->
              "SELECT FORMATDATETIME(delivered_at, 'yyyy-MM-dd HH:mm:ss.SSS', 'en', 'UTC') FROM "
                  + table;
        };
    assertThat(rows(url, sql).get(0).get(0)).startsWith("2026-05-04 10:15:30.123");
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  void aRepeatedKeyIsAlreadyDeliveredNotAnError(Db db) throws Exception {
    // Given an event already in the table
    String url = db.url();
    String table = table();
    JdbcSink sink = sink(url, table);
    sink.deliver(delivery("key-1", null, "{\"v\":1}"));

    // When Idem delivers it again (a retry after a lost answer, a redelivery from the outbox)
    DeliveryOutcome again = sink.deliver(delivery("key-1", null, "{\"v\":2}"));

    // Then it counts as delivered and the table still has the first version only
    assertThat(again).isInstanceOf(DeliveryOutcome.Delivered.class);
    List<List<String>> rows =
        rows(url, "SELECT idempotency_key, ordering_key, " + db.jsonField("v") + " FROM " + table);
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).get(1)).isNull();
    if (db != Db.H2) {
      assertThat(rows.get(0).get(2)).isEqualTo("1");
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  void aPayloadThatIsNotJsonFailsForGood(Db db) {
    String url = db.url();
    JdbcSink sink = sink(url, table());

    assertThat(sink.deliver(delivery("key-1", null, "{not json")))
        .isInstanceOfSatisfying(
            DeliveryOutcome.Failed.class,
            f -> {
              assertThat(f.retryable()).as(f.error()).isFalse();
              assertThat(f.error()).contains("SQLSTATE");
            });
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  void concurrentDeliveriesOfTheSameKeyInsertOneRow(Db db) throws Exception {
    String url = db.url();
    String table = table();
    JdbcSink sink = sink(url, table);
    sink.deliver(delivery("warm-up", null, "{}")); // create the table first

    List<Thread> threads = new ArrayList<>();
    List<DeliveryOutcome> outcomes = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < 4; i++) {
      Thread t = new Thread(() -> outcomes.add(sink.deliver(delivery("same", null, "{}"))));
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }

    assertThat(outcomes).hasSize(4).allMatch(o -> o instanceof DeliveryOutcome.Delivered);
    assertThat(
            rows(url, "SELECT idempotency_key FROM " + table + " WHERE idempotency_key = 'same'"))
        .hasSize(1);
  }

  @Test
  void anUnreachableDatabaseIsARetryableFailure() throws Exception {
    int port;
    try (java.net.ServerSocket socket =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = socket.getLocalPort();
    }
    JdbcSink sink =
        new JdbcSink(
            new JdbcSinkSettings(
                "jdbc:postgresql://127.0.0.1:" + port + "/x?user=u&password=hunter2",
                "t",
                null,
                null),
            clock);
    try {
      assertThat(sink.deliver(delivery("k", null, "{}")))
          .isInstanceOfSatisfying(
              DeliveryOutcome.Failed.class,
              f -> {
                assertThat(f.retryable()).isTrue();
                assertThat(f.error()).doesNotContain("hunter2");
              });
    } finally {
      sink.close();
    }
  }

  @Test
  void settingsAreValidatedAndHideThePassword() {
    assertThatThrownBy(() -> new JdbcSinkSettings("jdbc:oracle:thin:@h:1521/x", "t", null, null))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("jdbc:postgresql:");
    assertThatThrownBy(() -> new JdbcSinkSettings("jdbc:mysql://h/x", "t", null, null))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("jdbc:mariadb:");
    for (String bad : new String[] {"t; DROP TABLE x", "1abc", "a.b.c", "\"quoted\"", "", "a-b"}) {
      assertThatThrownBy(() -> new JdbcSinkSettings("jdbc:h2:mem:x", bad, null, null))
          .as(bad)
          .isInstanceOf(IdemConfigException.class);
    }
    assertThat(new JdbcSinkSettings("jdbc:h2:mem:x", "public.events", null, null).table())
        .isEqualTo("public.events");
    assertThatThrownBy(() -> new JdbcSinkSettings("jdbc:h2:mem:x", "t", null, null, 0))
        .isInstanceOf(IdemConfigException.class);

    JdbcSinkSettings settings =
        new JdbcSinkSettings("jdbc:postgresql://h/db?user=u&password=s3cret", "t", "u", "pw");
    assertThat(settings.toString().toLowerCase(Locale.ROOT))
        .contains("password=***")
        .doesNotContain("s3cret")
        .doesNotContain("=pw");
  }
}
