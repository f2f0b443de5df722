package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.TimeSource;
import dev.idem.key.CanonicalJson;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * Issue 10 §1: one depth limit for the body check and every reader of the body. A body nested 300
 * deep under {@code max_depth: 500} used to pass the check and then fail the key as {@code
 * missing_key}; now {@code max_depth} cannot exceed what the key reader takes, and the nesting
 * limit is answered {@code nesting_too_deep} whatever the key rule.
 */
class OneDepthLimitTest {

  static IdemConfig config(int maxDepth) {
    return ConfigLoader.parse(
        "depth.yaml",
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory }
        pipelines:
          - id: body
            source: { webhook: { path: /hooks/body, max_depth: %1$d } }
            dedup: {}
            deliver: { stdout: {} }
          - id: field
            source: { webhook: { path: /hooks/field, max_depth: %1$d } }
            dedup: { key: id }
            deliver: { stdout: {} }
        """
            .formatted(maxDepth),
        name -> null);
  }

  static String nested(int depth) {
    return "{\"id\":\"d\",\"n\":" + "[".repeat(depth - 1) + "]".repeat(depth - 1) + "}";
  }

  @Test
  void aMaxDepthDeeperThanTheKeyReaderTakesIsAConfigError() {
    assertThatThrownBy(() -> config(500))
        .hasMessageContaining("max_depth")
        .hasMessageContaining("must be from 1 to " + CanonicalJson.MAX_DEPTH);
  }

  @Test
  void atTheLimitEveryKeyRuleReadsTheBodyAndOnePastItIsNestingTooDeep() throws Exception {
    IdemConfig c = config(CanonicalJson.MAX_DEPTH);
    try (IdemServer server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()))) {
      Http http = new Http(server.uri());
      for (String path : new String[] {"/hooks/body", "/hooks/field"}) {
        HttpResponse<String> atLimit = http.post(path, nested(CanonicalJson.MAX_DEPTH));
        HttpResponse<String> tooDeep = http.post(path, nested(CanonicalJson.MAX_DEPTH + 1));

        assertThat(atLimit.statusCode()).as(path).isEqualTo(202);
        assertThat(tooDeep.statusCode()).as(path).isEqualTo(400);
        assertThat(tooDeep.body()).as(path).contains("\"nesting_too_deep\"");
      }
    }
  }
}
