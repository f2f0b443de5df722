package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code store.layout} and {@code store.compact_shards}: redis only, checked where they stand. */
class RedisLayoutConfigTest {

  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, Map.<String, String>of()::get);
  }

  private static ConfigException failure(String yaml) {
    try {
      parse(yaml);
    } catch (ConfigException e) {
      return e;
    }
    throw new AssertionError("expected a ConfigException for:\n" + yaml);
  }

  @Test
  void aRedisStoreTakesTheCompactLayoutAndItsShards() {
    IdemConfig config =
        parse(
            """
            store:
              type: redis
              url: redis://127.0.0.1:6379
              layout: compact
              compact_shards: 65536
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(config.store().redisLayout()).isEqualTo(RedisLayout.COMPACT);
    assertThat(config.store().compactShards()).isEqualTo(65536);
  }

  @Test
  void aRedisStoreWithoutALayoutIsStandard() {
    IdemConfig config =
        parse(
            """
            store: { type: redis, url: "redis://127.0.0.1:6379" }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(config.store().redisLayout()).isEqualTo(RedisLayout.STANDARD);
    assertThat(config.store().compactShards()).isNull();
  }

  @Test
  void aWrongLayoutShardsWithoutCompactAndALayoutOnAnotherStoreAreLocatedErrors() {
    ConfigException e =
        failure(
            """
            store: { type: rocksdb, layout: compact }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup: { store: { type: redis, url: "redis://h", layout: tiny } }
                deliver: { stdout: {} }
              - id: q
                source: { webhook: { path: /q } }
                dedup: { store: { type: redis, url: "redis://h", compact_shards: 8 } }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .anySatisfy(p -> assertThat(p).contains("store.layout: is only for a redis and jdbc store"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .contains("pipelines[0].dedup.store.layout: 'tiny' is not allowed")
                    .contains("use standard or compact"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .contains("pipelines[1].dedup.store.compact_shards")
                    .contains("only for a redis store with layout: compact"));
  }
}
