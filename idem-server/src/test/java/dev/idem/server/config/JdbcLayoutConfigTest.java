package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.store.jdbc.JdbcLayout;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code store.layout} on a jdbc store: {@code standard} or {@code partitioned}. */
class JdbcLayoutConfigTest {

  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, Map.<String, String>of()::get);
  }

  @Test
  void aJdbcStoreTakesThePartitionedLayout() {
    IdemConfig config =
        parse(
            """
            store: { type: jdbc, url: "jdbc:postgresql://127.0.0.1:5432/idem", layout: partitioned }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(config.store().jdbcLayout()).isEqualTo(JdbcLayout.PARTITIONED);
    assertThat(config.store().redisLayout()).isNull();
  }

  @Test
  void aJdbcStoreWithoutALayoutLeavesTheStoresDefault() {
    IdemConfig config =
        parse(
            """
            store: { type: jdbc, url: "jdbc:postgresql://127.0.0.1:5432/idem" }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(config.store().jdbcLayout()).isNull();
  }

  @Test
  void anUnknownJdbcLayoutIsALocatedError() {
    ConfigException e;
    try {
      parse(
          """
          store: { type: jdbc, url: "jdbc:postgresql://h/idem", layout: compact }
          pipelines:
            - id: p
              source: { webhook: { path: /in } }
              deliver: { stdout: {} }
          """);
      throw new AssertionError("expected a ConfigException");
    } catch (ConfigException thrown) {
      e = thrown;
    }
    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .anySatisfy(
            p -> assertThat(p).contains("store.layout").contains("standard or partitioned"));
  }
}
