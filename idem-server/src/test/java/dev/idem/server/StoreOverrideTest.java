package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import dev.idem.tck.ExternalService;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A per-pipeline dedup.store: one pipeline's keys in a shared Redis, seen by a second instance;
 * another pipeline's keys in the instance's own RocksDB directory, not seen by the other instance.
 */
class StoreOverrideTest {
  @TempDir Path dir;

  @Test
  void twoInstancesShareTheRedisPipelineButNotTheLocalOne() {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    String prefix = "idem-test:" + UUID.randomUUID() + ":";
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: rocksdb, path: %s }
        pipelines:
          - id: shared
            source: { webhook: { path: /shared } }
            dedup: { key: source.id, store: { type: redis, url: "%s", prefix: "%s" } }
            deliver: { stdout: {} }
          - id: local
            source: { webhook: { path: /local } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
        """;
    IdemConfig a =
        ConfigLoader.parse(
            "a.yaml", yaml.formatted(dir.resolve("a"), redis.url(), prefix), n -> null);
    IdemConfig b =
        ConfigLoader.parse(
            "b.yaml", yaml.formatted(dir.resolve("b"), redis.url(), prefix), n -> null);

    try (IdemServer one =
            IdemServer.start(
                a.server(), ServiceAssembly.assemble(a, new TestEdge(), TimeSource.system()));
        IdemServer two =
            IdemServer.start(
                b.server(), ServiceAssembly.assemble(b, new TestEdge(), TimeSource.system()))) {
      Http first = new Http(one.uri());
      Http second = new Http(two.uri());

      // given the same events accepted by the first instance
      assertThat(first.post("/shared", "{\"id\":\"e-1\"}").statusCode()).isEqualTo(202);
      assertThat(first.post("/local", "{\"id\":\"e-1\"}").statusCode()).isEqualTo(202);

      // then the second instance sees the Redis pipeline's key, not the local one's
      assertThat(second.post("/shared", "{\"id\":\"e-1\"}").statusCode()).isEqualTo(200);
      assertThat(second.post("/local", "{\"id\":\"e-1\"}").statusCode()).isEqualTo(202);
      assertThat(one.runtime().stores()).hasSize(2);
    }
  }

  @Test
  void anAsyncPipelineCanKeepItsKeysAndOutboxInPostgreSql() throws Exception {
    ExternalService pg =
        ExternalService.require(
            "PostgreSQL",
            "IDEM_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
            5432,
            "pg_ctlcluster 15 main start");
    String prefix = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 10) + "_";
    try (dev.idem.server.support.Receiver receiver = new dev.idem.server.support.Receiver()) {
      IdemConfig c =
          ConfigLoader.parse(
              "pg.yaml",
              """
              server: { host: 127.0.0.1, port: 0 }
              store: { type: memory }
              pipelines:
                - id: billing
                  source: { webhook: { path: /billing } }
                  dedup: { key: source.id, store: { type: jdbc, url: "%s", prefix: %s } }
                  deliver: { mode: async, retries: 3, backoff: 20ms, http: { url: "%s" } }
              """
                  .formatted(pg.url(), prefix, receiver.uri("/billing")),
              n -> null);
      try (IdemServer server =
          IdemServer.start(
              c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()))) {
        Http http = new Http(server.uri());

        assertThat(http.post("/billing", "{\"id\":\"inv-1\"}").statusCode()).isEqualTo(202);
        assertThat(http.post("/billing", "{\"id\":\"inv-1\"}").statusCode()).isEqualTo(200);
        org.awaitility.Awaitility.await()
            .atMost(java.time.Duration.ofSeconds(20))
            .until(() -> receiver.received().size() == 1);
        assertThat(server.runtime().stores())
            .singleElement()
            .satisfies(s -> assertThat(s.describe()).contains("postgresql"));
      }
    } finally {
      dropTables(pg.url(), prefix);
    }
  }

  static void dropTables(String url, String prefix) throws Exception {
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(url);
        java.sql.Statement st = c.createStatement()) {
      java.util.List<String> tables = new java.util.ArrayList<>();
      try (java.sql.ResultSet rs =
          st.executeQuery(
              "select table_name from information_schema.tables where table_name like '"
                  + prefix
                  + "%'")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        st.execute("drop table if exists " + t + " cascade");
      }
    }
  }
}
