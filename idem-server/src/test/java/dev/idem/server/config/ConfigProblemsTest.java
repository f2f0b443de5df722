package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.signature.SignatureScheme;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 8: every duration and size has an upper bound that is a located config error, secrets are
 * checked at load time, and one run reports every problem of a file, whatever phase finds it.
 */
class ConfigProblemsTest {
  private static final Map<String, String> ENV = Map.of("SECRET", "whsec_c2VjcmV0LWtleQ==");

  private static ConfigException failure(String yaml) {
    try {
      ConfigLoader.parse("idem.yaml", yaml, ENV::get);
    } catch (ConfigException e) {
      return e;
    }
    throw new AssertionError("expected a ConfigException for:\n" + yaml);
  }

  @Test
  void aHugeToleranceOrWindowIsALocatedErrorNotALongOverflow() {
    // Before: ArithmeticException: long overflow in check-config, and a 500 for every signed event
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /in
                    signature: { scheme: github, secret: s, tolerance: 106751991168d }
                dedup: { window: 106751991168d }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:7:49: pipelines[0].source.webhook.signature.tolerance: must be at most 1d,"
                + " got 106751991168d; use a shorter one",
            "idem.yaml:8:14: pipelines[0].dedup.window: must be at most 3650d, got 106751991168d;"
                + " use a shorter one");
  }

  @Test
  void everyDurationAndSizeHasAnUpperBound() {
    ConfigException e =
        failure(
            """
            server: { shutdown_timeout: 2h }
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in, max_body: 999999999999GiB } }
                dedup: { lease: 25h }
                ordering: { key: source.c, lock_ttl: 25h }
                deliver:
                  backoff: 2d
                  max_backoff: 999999999999d
                  http: { url: "http://127.0.0.1:9/x", timeout: 11m }
            """);

    assertThat(e.problems())
        .extracting(p -> p.path() + ": " + p.message())
        .containsExactly(
            "server.shutdown_timeout: must be at most 1h, got 2h; use a shorter one",
            "pipelines[0].source.webhook.max_body: must be at most 64MiB, got 999999999999GiB; use"
                + " a smaller one",
            "pipelines[0].dedup.lease: must be at most 1d, got 25h; use a shorter one",
            "pipelines[0].ordering.lock_ttl: must be at most 1d, got 25h; use a shorter one",
            "pipelines[0].deliver.backoff: must be at most 1d, got 2d; use a shorter one",
            "pipelines[0].deliver.max_backoff: must be at most 1d, got 999999999999d; use a"
                + " shorter one",
            "pipelines[0].deliver.http.timeout: must be at most 10m, got 11m; use a shorter one");
  }

  @Test
  void theLargestAllowedValuesLoad() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml",
            """
            server: { shutdown_timeout: 1h }
            store: { type: memory }
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /in
                    max_body: 64MiB
                    signature: { scheme: stripe, secret: whsec_x, tolerance: 24h }
                dedup: { window: 3650d, lease: 24h }
                ordering: { key: source.c, lock_ttl: 24h }
                deliver:
                  backoff: 24h
                  max_backoff: 24h
                  http: { url: "http://127.0.0.1:9/x", timeout: 10m }
            """,
            ENV::get);

    assertThat(c.pipelines().get(0).dedup().config().ttl()).isEqualTo(Durations.MAX);
    assertThat(c.pipelines().get(0).webhook().signature().tolerance())
        .isEqualTo(java.time.Duration.ofHours(24));
  }

  @Test
  void aStandardWebhooksSecretThatIsNotBase64IsACheckConfigError() {
    // Before: check-config passed, and serve failed building the verifier
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /in
                    signature: { scheme: standard, secret: "whsec_not base64!" }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.path()).isEqualTo("pipelines[0].source.webhook.signature.secret");
              assertThat(p.location().line()).isEqualTo(7);
              assertThat(p.message()).contains("whsec_ followed by base64");
              assertThat(p.toString()).doesNotContain("not base64!");
            });
  }

  @Test
  void secretsListsTheSecretsOfARollAndEachIsCheckedAtItsEntry() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /in
                    signature: { scheme: standard, secrets: ["${SECRET}", whsec_b2xkLWtleQ==] }
                deliver: { stdout: {} }
            """,
            ENV::get);
    assertThat(c.pipelines().get(0).webhook().signature().scheme())
        .isEqualTo(SignatureScheme.STANDARD);
    assertThat(c.pipelines().get(0).webhook().signature().secrets())
        .containsExactly("whsec_c2VjcmV0LWtleQ==", "whsec_b2xkLWtleQ==");

    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: a
                source:
                  webhook:
                    path: /a
                    signature: { scheme: standard, secrets: [whsec_b2xkLWtleQ==, "not base64!"] }
                deliver: { stdout: {} }
              - id: b
                source:
                  webhook: { path: /b, signature: { scheme: github, secret: s, secrets: [s] } }
                deliver: { stdout: {} }
              - id: c
                source: { webhook: { path: /c, signature: { scheme: github, secrets: [] } } }
                deliver: { stdout: {} }
            """);
    assertThat(e.problems())
        .extracting(ConfigProblem::path)
        .containsExactly(
            "pipelines[0].source.webhook.signature.secrets[1]",
            "pipelines[1].source.webhook.signature.secrets",
            "pipelines[2].source.webhook.signature.secrets");
    assertThat(e.problems().get(1).message()).contains("not both");
    assertThat(e.problems().get(2).message()).contains("is empty");
  }

  @Test
  void oneRunReportsUnknownKeysWrongTypesAndBadValuesTogether() {
    // Before: the typo'd key was reported alone, and expiry: slidin only on the next run
    ConfigException e =
        failure(
            """
            server:
              prot: 8080
              max_threads: lots
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup:
                  windw: 1h
                  expiry: slidin
                  lease: 30 s
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(p -> p.location().line() + ":" + p.path())
        .containsExactly(
            "2:server.prot",
            "3:server.max_threads",
            "9:pipelines[0].dedup.windw",
            "10:pipelines[0].dedup.expiry",
            "11:pipelines[0].dedup.lease");
    assertThat(e.problems().get(1).message()).isEqualTo("expected a whole number");
    assertThat(e.problems().get(3).message())
        .isEqualTo("'slidin' is not allowed; use sliding or fixed");
  }

  @Test
  void aRepeatedKeyAndAnUnsetVariableDoNotHideTheRest() {
    ConfigException e =
        failure(
            """
            server:
              port: 1
              port: 2
              admin_token: ${UNSET_TOKEN}
            store: { type: memory }
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /in
                    signature: { scheme: github, secret: "${UNSET_SECRET}" }
                dedup: { expiry: slidin }
                deliver: { stdout: {} }
            """);

    // The unset secret is reported once, as unset, not again as missing
    assertThat(e.problems())
        .extracting(p -> p.location().line() + ":" + p.path())
        .containsExactly(
            "3:server.port",
            "4:server.admin_token",
            "11:pipelines[0].source.webhook.signature.secret",
            "12:pipelines[0].dedup.expiry");
    assertThat(e.problems().get(2).message()).contains("UNSET_SECRET is not set");
  }

  @Test
  void aValueOfTheWrongShapeIsReportedAndTheRestIsStillChecked() {
    ConfigException e =
        failure(
            """
            server: [8080]
            pipelines:
              - id: p
                source: { webhook: { path: /in, max_depth: 1.5 } }
                dedup: { key: source.id, window: 1x }
                deliver: { http: { url: "http://127.0.0.1:9/x", headers: { X-A: [1] } } }
            """);

    assertThat(e.problems())
        .extracting(p -> p.path() + ": " + p.message())
        .containsExactly(
            "server: expected a map of fields (key: value), not a single value or a list",
            "pipelines[0].source.webhook.max_depth: expected a whole number",
            "pipelines[0].dedup.window: '1x' is not a duration; write a whole number and a unit:"
                + " ms, s, m, h or d (e.g. 30s, 5m, 24h, 7d)",
            "pipelines[0].deliver.http.headers.X-A: expected a single value (text), not a list or"
                + " a map");
  }
}
