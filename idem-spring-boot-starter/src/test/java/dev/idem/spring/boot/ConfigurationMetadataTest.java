package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The jar carries configuration metadata, so IDEs complete and document {@code idem.*}. */
class ConfigurationMetadataTest {
  @Test
  void everyPropertyIsDescribedForTheIde() throws Exception {
    String json;
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("META-INF/spring-configuration-metadata.json").isNotNull();
      json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(json)
        .contains(
            "\"idem.store.type\"",
            "\"idem.store.redis.url\"",
            "\"idem.store.redis.prefix\"",
            "\"idem.store.jdbc.table-prefix\"",
            "\"idem.store.rocksdb.path\"",
            "\"idem.store.memory.max-keys-per-scope\"",
            "\"idem.scopes\"",
            "\"idem.metrics.enabled\"")
        .contains("Redis URL; when unset");
  }
}
