package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Expiry;
import dev.idem.server.signature.SignatureScheme;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {
  private static final Map<String, String> ENV =
      Map.of("IDEM_ADMIN_TOKEN", "0123456789abcdef0123", "SHOP_SECRET", "s3cr3t, with {braces}");

  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, ENV::get);
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
  void theDesignExampleParsesWithEveryField() {
    // given the example of DESIGN §6, written exactly as there (with a flow-mapping ${SECRET})
    String yaml =
        """
        server:
          port: 8080
          admin_token: ${IDEM_ADMIN_TOKEN}             # bearer token for /admin; no token = admin off
        store:
          type: rocksdb                                # rocksdb | memory | redis | jdbc
          path: ./data                                 # rocksdb
          # url: redis://127.0.0.1:6379  |  jdbc:postgresql://127.0.0.1:5432/idem
        pipelines:
          - id: shop-orders
            source:
              webhook:
                path: /hooks/shop/orders
                max_body: 1MiB
                signature: { scheme: shopify, secret: ${SHOP_SECRET}, tolerance: 5m }  # stripe|github|shopify|standard
            dedup:
              key: source.id            # a body field path; [a, b] = composite; header("X-Id"); omitted = default key
              window: 24h
              expiry: sliding           # sliding (a hit refreshes the window) | fixed (from first commit)
              lease: 5m                 # how long an in-flight reservation blocks the key
              mode: drop                # drop | replay (store the result and return it to duplicates)
            ordering: { key: source.customer_id, mode: strict, lock_ttl: 60s }   # strict | best-effort
            transform: { jq: '{id: .id, total: .total_price}' }
            deliver:
              mode: async               # sync | async
              http: { url: http://127.0.0.1:9000/orders, timeout: 10s, retries: 8 }
        """;

    // when
    IdemConfig config = parse(yaml);

    // then
    assertThat(config.server().port()).isEqualTo(8080);
    assertThat(config.server().adminToken()).isEqualTo("0123456789abcdef0123");
    assertThat(config.server().host()).isEqualTo("0.0.0.0");
    assertThat(config.store().type()).isEqualTo(StoreType.ROCKSDB);
    assertThat(config.store().path()).isEqualTo(Path.of("./data"));
    PipelineSettings p = config.pipelines().get(0);
    assertThat(p.id()).isEqualTo("shop-orders");
    assertThat(p.webhook().path()).isEqualTo("/hooks/shop/orders");
    assertThat(p.webhook().maxBody()).isEqualTo(1L << 20);
    assertThat(p.webhook().signature().scheme()).isEqualTo(SignatureScheme.SHOPIFY);
    assertThat(p.webhook().signature().secrets()).containsExactly("s3cr3t, with {braces}");
    assertThat(p.webhook().signature().tolerance()).isEqualTo(Duration.ofMinutes(5));
    assertThat(p.dedup().key()).isEqualTo(KeySpec.single("source.id"));
    assertThat(p.dedup().config().ttl()).isEqualTo(Duration.ofHours(24));
    assertThat(p.dedup().config().expiry()).isEqualTo(Expiry.SLIDING);
    assertThat(p.dedup().config().lease()).isEqualTo(Duration.ofMinutes(5));
    assertThat(p.dedup().mode()).isEqualTo(DedupMode.DROP);
    assertThat(p.ordering().key()).isEqualTo(KeySpec.single("source.customer_id"));
    assertThat(p.ordering().mode()).isEqualTo(OrderingMode.STRICT);
    assertThat(p.ordering().lockTtl()).isEqualTo(Duration.ofSeconds(60));
    assertThat(p.jq()).isEqualTo("{id: .id, total: .total_price}");
    assertThat(p.deliver().mode()).isEqualTo(DeliveryMode.ASYNC);
    assertThat(p.deliver().retry().retries()).isEqualTo(8);
    assertThat(p.deliver().sink())
        .isEqualTo(
            new SinkSettings.Http(
                URI.create("http://127.0.0.1:9000/orders"), Map.of(), Duration.ofSeconds(10)));
  }

  @Test
  void defaultsApplyWhenOnlyAPipelineIsGiven() {
    IdemConfig config =
        parse(
            """
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(config.server()).isEqualTo(ServerSettings.defaults());
    assertThat(config.store()).isEqualTo(StoreSettings.defaults());
    PipelineSettings p = config.pipelines().get(0);
    assertThat(p.dedup()).isNull();
    assertThat(p.webhook().maxBody()).isEqualTo(WebhookSettings.DEFAULT_MAX_BODY);
    assertThat(p.deliver().mode()).isEqualTo(DeliveryMode.SYNC);
    assertThat(p.deliver().retry()).isEqualTo(ConfigConverter.SYNC_DEFAULT_RETRY);
    assertThat(p.deliver().sink()).isEqualTo(new SinkSettings.Stdout());
  }

  @Test
  void compositeAndHeaderKeysAreKeptAsWritten() {
    IdemConfig config =
        parse(
            """
            store: { type: memory }
            pipelines:
              - id: a
                source: { webhook: { path: /a } }
                dedup: { key: [source.entity_id, source.event_type], window: 1h, max_keys: 500 }
                deliver: { stdout: {} }
              - id: b
                source: { webhook: { path: /b } }
                dedup: { key: 'header("X-Id")', expiry: fixed, window: none, max_keys: 1000 }
                deliver: { file: { path: out.jsonl } }
            """);

    assertThat(config.pipelines().get(0).dedup().key())
        .isEqualTo(new KeySpec(List.of("source.entity_id", "source.event_type"), true));
    assertThat(config.pipelines().get(0).dedup().maxKeys()).isEqualTo(500L);
    assertThat(config.pipelines().get(1).dedup().key())
        .isEqualTo(KeySpec.single("header(\"X-Id\")"));
    assertThat(config.pipelines().get(1).dedup().config().ttl()).isNull();
    assertThat(config.pipelines().get(1).dedup().config().expiry()).isEqualTo(Expiry.FIXED);
    assertThat(config.store().maxKeys()).isEqualTo(StoreSettings.DEFAULT_MAX_KEYS);
  }

  @Test
  void aBadEnumNamesFileLineColumnFieldAndTheAllowedValues() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: shop-orders
                source:
                  webhook:
                    path: /hooks/shop/orders
                dedup:
                  key: source.id
                  window: 24h
                  expiry: slidin
                deliver: { stdout: {} }
            """);

    assertThat(e.getMessage())
        .isEqualTo(
            "idem.yaml:10:7: pipelines[0].dedup.expiry: 'slidin' is not allowed; use sliding or"
                + " fixed");
  }

  @Test
  void everyUnknownKeyIsReportedWithWhatIsAllowedThere() {
    ConfigException e =
        failure(
            """
            server:
              prot: 8080
            pipelines:
              - id: p
                source: { webhook: { path: /in, maxbody: 1MiB } }
                deliver: { stdout: { pretty: true } }
            """);

    assertThat(e.problems()).hasSize(3);
    assertThat(e.problems().get(0).toString())
        .isEqualTo(
            "idem.yaml:2:3: server.prot: unknown key 'prot'; allowed here: admin_token, host,"
                + " idle_timeout, log_level, management_port, max_header_size, max_threads,"
                + " min_data_rate, port, read_timeout, shutdown_timeout, tls");
    assertThat(e.problems().get(1).toString())
        .startsWith("idem.yaml:5:37: pipelines[0].source.webhook.maxbody: unknown key 'maxbody';")
        .contains("max_body");
    assertThat(e.problems().get(2).toString())
        .isEqualTo(
            "idem.yaml:6:26: pipelines[0].deliver.stdout.pretty: unknown key 'pretty'; this block"
                + " takes no keys (write {})");
  }

  @Test
  void badDurationsAndSizesSayTheExpectedForm() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in, max_body: 1MB } }
                dedup:
                  window: 24 hours
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:4:37: pipelines[0].source.webhook.max_body: '1MB' is not a size; write a"
                + " whole number of bytes, optionally with a unit: B, KiB, MiB or GiB (e.g. 512KiB,"
                + " 1MiB)",
            "idem.yaml:6:7: pipelines[0].dedup.window: '24 hours' is not a duration; write a whole"
                + " number and a unit: ms, s, m, h or d (e.g. 30s, 5m, 24h, 7d)");
  }

  @Test
  void anUnsetVariableWithoutDefaultIsAnErrorNamingIt() {
    ConfigException e =
        failure(
            """
            server:
              admin_token: ${MISSING_TOKEN}
            pipelines:
              - id: p   # ${ALSO_MISSING} in a comment is fine
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(e.getMessage())
        .isEqualTo(
            "idem.yaml:2:16: server.admin_token: environment variable MISSING_TOKEN is not set;"
                + " export it, or give a default: ${MISSING_TOKEN:-value}");
  }

  @Test
  void variablesWithDefaultsAndLiteralDollarsAreSubstituted() {
    IdemConfig config =
        parse(
            """
            server:
              port: ${IDEM_PORT:-9090}
              host: "${IDEM_HOST:-127.0.0.1}"
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver:
                  http:
                    url: http://127.0.0.1:9000/x
                    headers: { X-Template: "$${NOT_A_VAR}" }
            """);

    assertThat(config.server().port()).isEqualTo(9090);
    assertThat(config.server().host()).isEqualTo("127.0.0.1");
    assertThat(((SinkSettings.Http) config.pipelines().get(0).deliver().sink()).headers())
        .containsEntry("X-Template", "${NOT_A_VAR}");
  }

  @Test
  void wrongTypesAreReportedAtTheirField() {
    ConfigException e =
        failure(
            """
            server:
              port: eighty
            pipelines: []
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:2:3: server.port: expected a whole number",
            "idem.yaml:3:1: pipelines: give at least one pipeline (see examples/quickstart.yaml)");
  }

  @Test
  void pipelineIdsAndPathsMustBeUnique() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:6:5: pipelines[1].id: 'p' is already the id of pipelines[0]; ids are unique",
            "idem.yaml:7:26: pipelines[1].source.webhook.path: '/in' is already the path of"
                + " pipelines[0]; paths are unique");
  }

  @Test
  void crossFieldRulesAreReportedAtTheFieldThatBreaksThem() {
    ConfigException e =
        failure(
            """
            store:
              type: redis
              url: redis://127.0.0.1:6379
            pipelines:
              - id: a
                source: { webhook: { path: /a } }
                dedup: { max_keys: 10 }
                deliver: { mode: async, stdout: {} }
              - id: b
                source: { webhook: { path: /b } }
                dedup: { mode: replay }
                deliver: { mode: async, http: { url: http://127.0.0.1:1/x } }
              - id: c
                source: { webhook: { path: /c } }
                deliver: { mode: async, stdout: {}, file: { path: x } }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:7:14: pipelines[0].dedup.max_keys: is only for the memory store; this"
                + " pipeline's store is redis (bound a durable store with window instead)",
            "idem.yaml:8:16: pipelines[0].deliver.mode: async needs a store with an outbox (rocksdb,"
                + " memory or jdbc); this pipeline's store is redis; use mode: sync or another"
                + " store",
            "idem.yaml:11:14: pipelines[1].dedup.mode: replay needs deliver.mode: sync (duplicates"
                + " get the downstream's stored answer, which async delivery does not wait for); use"
                + " mode: drop or deliver.mode: sync",
            "idem.yaml:12:16: pipelines[1].deliver.mode: async needs a store with an outbox"
                + " (rocksdb, memory or jdbc); this pipeline's store is redis; use mode: sync or"
                + " another store",
            "idem.yaml:15:41: pipelines[2].deliver.file: a pipeline delivers to one sink; remove"
                + " file");
  }

  @Test
  void storeFieldsMustFitTheType() {
    ConfigException e =
        failure(
            """
            store:
              type: rocksdb
              url: redis://127.0.0.1:6379
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup:
                  store: { type: reddis }
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "idem.yaml:3:3: store.url: is only for a redis and jdbc store, not for type rocksdb;"
                + " remove it",
            "idem.yaml:8:16: pipelines[0].dedup.store.type: 'reddis' is not allowed; use rocksdb,"
                + " memory, redis or jdbc");
  }

  @Test
  void storeFaultSettingsAreReadAndMustFitTheType() {
    IdemConfig ok =
        parse(
            """
            store:
              type: redis
              url: redis://127.0.0.1:6379
              timeout: 500ms
              reconnect_delay: 100ms
              require_durable: true
              fail_fast: true
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup: { store: { type: jdbc, url: "jdbc:h2:mem:x", claim_timeout: 30s } }
                deliver: { mode: async, stdout: {} }
            """);
    assertThat(ok.store().faults())
        .isEqualTo(
            new StoreFaults(
                Duration.ofMillis(500),
                Duration.ofMillis(100),
                true,
                true,
                StoreFaults.DEFAULT_CLAIM_TIMEOUT));
    assertThat(ok.storeOf(ok.pipelines().get(0)).faults().claimTimeout())
        .isEqualTo(Duration.ofSeconds(30));

    ConfigException e =
        failure(
            """
            store: { type: rocksdb, timeout: 2s }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup: { store: { type: redis, url: "redis://h", claim_timeout: 1m } }
                deliver: { stdout: {} }
            """);
    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .anySatisfy(
            p -> assertThat(p).contains("store.timeout: is only for a redis and jdbc store"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .contains("dedup.store.claim_timeout: is only for a rocksdb, memory and jdbc"));
  }

  @Test
  void aJdbcStoreTakesAnInstanceIdAndOtherStoresRefuseIt() {
    IdemConfig ok =
        parse(
            """
            store: { type: jdbc, url: "jdbc:h2:mem:x", instance_id: idem-0 }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);
    assertThat(ok.store().instanceId()).isEqualTo("idem-0");

    ConfigException e =
        failure(
            """
            store: { type: rocksdb, instance_id: idem-0 }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """);
    assertThat(e.problems())
        .extracting(ConfigProblem::toString)
        .anySatisfy(p -> assertThat(p).contains("store.instance_id: is only for a jdbc store"));
  }

  @Test
  void malformedYamlIsReportedWithItsPosition() {
    ConfigException e = failure("server:\n  port: [8080\n");

    assertThat(e.getMessage()).startsWith("idem.yaml:").contains("not valid YAML");
  }

  @Test
  void aRepeatedKeyIsAnError() {
    ConfigException e =
        failure(
            """
            server:
              port: 1
              port: 2
            pipelines: []
            """);

    assertThat(e.problems().get(0).toString())
        .isEqualTo("idem.yaml:3:3: server.port: is given twice (first at line 2); keep one");
  }

  @Test
  void aKeyRuleThatDoesNotParseIsReportedAtItsEntry() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                dedup:
                  key: [source.id, 'header("X Bad")']
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .singleElement()
        .satisfies(
            pr -> {
              assertThat(pr.path()).isEqualTo("pipelines[0].dedup.key[1]");
              assertThat(pr.location().line()).isEqualTo(6);
              assertThat(pr.message()).contains("X Bad");
            });
  }

  @Test
  void aJqProgramThatDoesNotCompileIsReportedAtItsField() {
    ConfigException e =
        failure(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                transform:
                  jq: '{id: .id'
                deliver: { stdout: {} }
            """);

    assertThat(e.problems())
        .singleElement()
        .satisfies(
            pr -> {
              assertThat(pr.path()).isEqualTo("pipelines[0].transform.jq");
              assertThat(pr.location().line()).isEqualTo(6);
            });
  }
}
