package dev.idem.server.source.kafka;

import static dev.idem.server.source.kafka.KafkaFixtures.produce;
import static dev.idem.server.source.kafka.KafkaFixtures.serve;
import static dev.idem.server.source.kafka.KafkaFixtures.uncommitted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.kafka.testing.KafkaBroker;
import dev.idem.server.IdemServer;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.tck.ExternalService;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;

/**
 * Issue 10 §4: the Go seed's pipeline, examples/kafka-orders-to-postgres.yaml as written, end to
 * end: a real KRaft broker (topic orders, group ingest), the real Redis (prefix idem:orders:) and
 * the real PostgreSQL table. 2,000 records, 30% of them repeating an X-Order-Id: each order is in
 * the table once and the group's offsets are at the end.
 */
class KafkaOrdersExampleTest {

  @Test
  void theSeedsPipelineWritesEachOrderOnceAndCommitsEveryOffset() throws Exception {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    ExternalService pg =
        ExternalService.require(
            "PostgreSQL",
            "IDEM_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
            5432,
            "pg_ctlcluster 15 main start");
    String table = "orders_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    String run = UUID.randomUUID().toString().substring(0, 8); // order ids no earlier run used
    try (KafkaBroker kafka = KafkaBroker.start();
        KafkaProducer<String, String> producer =
            KafkaFixtures.plainProducer(kafka.bootstrapServers())) {
      kafka.createTopic("orders", 3);
      KafkaFixtures.awaitLeaders(kafka.bootstrapServers(), "orders");
      kafka.createTopic("orders.dead-letter", 1);
      Random random = new Random(4);
      List<String[]> records = new ArrayList<>();
      for (int i = 0; i < 1_400; i++) {
        String id = run + "-" + i;
        records.add(new String[] {"{\"order\":\"" + id + "\",\"amount\":" + i + "}", id});
      }
      for (int i = 0; i < 600; i++) {
        String id = run + "-" + random.nextInt(1_400);
        records.add(new String[] {"{\"order\":\"" + id + "\",\"retry\":true}", id});
      }
      Collections.shuffle(records.subList(200, records.size()), random);
      produce(producer, "orders", records);

      Map<String, String> env =
          Map.of(
              "IDEM_PORT", "0",
              "KAFKA_BOOTSTRAP", kafka.bootstrapServers(),
              "IDEM_REDIS_URL", redis.url(),
              "ORDERS_DB_URL", pg.url(),
              "ORDERS_TABLE", table);
      IdemConfig config =
          ConfigLoader.load(Path.of("..", "examples", "kafka-orders-to-postgres.yaml"), env::get);
      try (IdemServer server = serve(config)) {
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(250))
            .until(() -> uncommitted(kafka.bootstrapServers(), "ingest", "orders") == 0);
      }

      try (Connection c = DriverManager.getConnection(pg.url());
          Statement s = c.createStatement();
          ResultSet r =
              s.executeQuery(
                  "SELECT count(*), count(DISTINCT payload->>'order'), max(cnt) FROM (SELECT"
                      + " payload, count(*) OVER (PARTITION BY payload->>'order') AS cnt FROM "
                      + table
                      + ") t")) {
        r.next();
        assertThat(r.getLong(1)).as("rows").isEqualTo(1_400);
        assertThat(r.getLong(2)).as("distinct orders").isEqualTo(1_400);
        assertThat(r.getLong(3)).as("rows of the most repeated order").isEqualTo(1);
      }
      assertThat(uncommitted(kafka.bootstrapServers(), "ingest", "orders")).isZero();
    } finally {
      try (Connection c = DriverManager.getConnection(pg.url());
          Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }
}
