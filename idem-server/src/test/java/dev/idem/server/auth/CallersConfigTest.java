package dev.idem.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import dev.idem.server.config.ConfigException;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.ConfigPrinter;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.TenantSpec;
import dev.idem.server.config.TlsSettings;
import dev.idem.server.support.TestCertificates;
import dev.idem.server.support.TestCertificates.Identity;
import dev.idem.server.tls.ServerTls;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15's configuration: {@code server.tls}, {@code auth.mtls}, {@code auth.principal_header},
 * {@code tenant} and {@code window: forever}; each mistake a located problem saying the fix.
 */
class CallersConfigTest {
  @TempDir static Path dir;
  static Path cert;
  static Path key;
  static Path ca;
  static Identity server;

  @BeforeAll
  static void files() throws Exception {
    Identity authority = TestCertificates.ca("CN=Config CA");
    server = TestCertificates.leaf("CN=config-server", authority, true);
    cert = dir.resolve("cert.pem");
    key = dir.resolve("key.pem");
    ca = dir.resolve("ca.pem");
    Files.writeString(cert, TestCertificates.pem(server.cert()));
    Files.writeString(key, TestCertificates.pem(server.keys().getPrivate()));
    Files.writeString(ca, TestCertificates.pem(authority.cert()));
  }

  private static IdemConfig parse(String yaml) {
    return ConfigLoader.parse("idem.yaml", yaml, n -> null);
  }

  private static String problems(String yaml) {
    try {
      parse(yaml);
    } catch (ConfigException e) {
      return e.problems().toString();
    }
    throw new AssertionError("expected a ConfigException for\n" + yaml);
  }

  private static String pipeline(String store, String extra, String dedup) {
    return """
        store: { type: %s, path: "%s" }
        pipelines:
          - id: p
            source: { webhook: { path: /in } }
            %s
            dedup: %s
            deliver: { stdout: {} }
        """
        .formatted(store, dir.resolve("data"), extra, dedup)
        .replace(
            "path: \"" + dir.resolve("data") + "\" }",
            store.equals("memory") ? "}" : "path: \"" + dir.resolve("data") + "\" }")
        .replace("type: memory, path: \"" + dir.resolve("data") + "\" }", "type: memory }");
  }

  @Test
  void windowForeverKeepsKeysOnADurableStore() {
    IdemConfig c = parse(pipeline("rocksdb", "", "{ key: source.id, window: forever }"));

    assertThat(c.pipelines().get(0).dedup().config().ttl()).isNull();
    assertThat(ConfigPrinter.toYaml(c)).contains("window: forever");
  }

  @Test
  void windowForeverOnTheMemoryStoreNeedsMaxKeys() {
    assertThat(problems(pipeline("memory", "", "{ key: source.id, window: forever }")))
        .contains("pipelines[0].dedup.window")
        .contains("forever on the memory store needs dedup.max_keys");
    assertThat(problems(pipeline("memory", "", "{ key: source.id, window: none }")))
        .contains("needs dedup.max_keys");
    assertThat(
            parse(pipeline("memory", "", "{ key: source.id, window: forever, max_keys: 100 }"))
                .pipelines()
                .get(0)
                .dedup()
                .maxKeys())
        .isEqualTo(100L);
  }

  @Test
  void aTenantIsAFieldAHeaderOrAClaim() {
    assertThat(TenantSpec.parse("source.shop"))
        .isEqualTo(new TenantSpec(TenantSpec.Source.FIELD, "source.shop"));
    assertThat(TenantSpec.parse("header(\"X-Tenant\")"))
        .isEqualTo(new TenantSpec(TenantSpec.Source.HEADER, "X-Tenant"));
    assertThat(TenantSpec.parse("claim('tid')"))
        .isEqualTo(new TenantSpec(TenantSpec.Source.CLAIM, "tid"));
    assertThat(TenantSpec.parse("claim(tid)").toString()).isEqualTo("claim(\"tid\")");
    assertThatThrownBy(() -> TenantSpec.parse("cookie(\"t\")"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("header(\"X-Tenant\") or claim(\"tid\")");
  }

  @Test
  void tenantMistakesAreLocated() {
    assertThat(problems(pipeline("rocksdb", "tenant: claim(\"tid\")", "{ key: source.id }")))
        .contains("pipelines[0].tenant")
        .contains("set source.webhook.auth.jwt");
    assertThat(problems(pipeline("rocksdb", "tenant: 'a..b'", "{ key: source.id }")))
        .contains("pipelines[0].tenant");
    assertThat(
            problems(
                pipeline("memory", "tenant: header(\"X-T\")", "{ key: source.id, max_keys: 5 }")))
        .contains("pipelines[0].dedup.max_keys")
        .contains("store.max_keys");
    assertThat(
            problems(
                """
                store: { type: memory }
                pipelines:
                  - id: p
                    tenant: header("X-T")
                    source: { webhook: { path: /in } }
                    deliver: { stdout: {} }
                """))
        .contains("pipelines[0].tenant")
        .contains("add dedup");
    assertThat(
            ConfigPrinter.toYaml(
                parse(pipeline("rocksdb", "tenant: header(\"X-T\")", "{ key: source.id }"))))
        .contains("tenant: header(\"X-T\")");
  }

  private static String source(String auth, String server) {
    return """
        server: %s
        store: { type: memory }
        pipelines:
          - id: p
            source: { webhook: { path: /in, auth: %s } }
            dedup: {}
            deliver: { stdout: {} }
        """
        .formatted(server, auth);
  }

  private static String tls(String extra) {
    return "{ tls: { certificate: \"%s\", private_key: \"%s\"%s } }".formatted(cert, key, extra);
  }

  @Test
  void mtlsNeedsTlsOnTheListenerAndACa() {
    assertThat(problems(source("{ mtls: {} }", "{}")))
        .contains("pipelines[0].source.webhook.auth.mtls")
        .contains("set server.tls");
    assertThat(problems(source("{ mtls: {} }", tls(""))))
        .contains("set server.tls.client_ca or auth.mtls.ca");
    IdemConfig ok = parse(source("{ mtls: {} }", tls(", client_ca: \"" + ca + "\"")));
    assertThat(ok.pipelines().get(0).webhook().callers()).isTrue();
    assertThat(ok.server().tls().reloadInterval()).isEqualTo(Duration.ofSeconds(30));
    assertThat(parse(source("{ mtls: { ca: \"" + ca + "\" } }", tls(""))).server().tls())
        .isNotNull();
  }

  @Test
  void aSourceHasOneKindOfCaller() {
    assertThat(
            problems(
                source(
                    "{ principal_header: X-Principal, mtls: {} }",
                    tls(", client_ca: \"" + ca + "\""))))
        .contains("pipelines[0].source.webhook.auth")
        .contains("one of jwt, mtls and principal_header");
    assertThat(problems(source("{ principal_header: \"X Principal\" }", "{}")))
        .contains("auth.principal_header")
        .contains("is not a header name");
  }

  @Test
  void tlsMistakesAreLocated() throws Exception {
    assertThat(
            problems(
                source("{ principal_header: X-P }", "{ tls: { certificate: \"" + cert + "\" } }")))
        .contains("server.tls")
        .contains("certificate needs private_key");
    assertThat(
            problems(
                source(
                    "{ principal_header: X-P }",
                    "{ tls: { certificate: \"" + cert + "\", private_key: \"" + cert + "\" } }")))
        .contains("is not an unencrypted PKCS#8 PEM key");
    Path rsaKey = dir.resolve("rsa-key.pem");
    Files.writeString(
        rsaKey, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
    assertThat(
            problems(
                source(
                    "{ principal_header: X-P }",
                    "{ tls: { certificate: \"" + cert + "\", private_key: \"" + rsaKey + "\" } }")))
        .contains("openssl pkcs8 -topk8");
  }

  @Test
  void aPkcs12KeystoreLoadsWithItsPassword() throws Exception {
    Path p12 = dir.resolve("server.p12");
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    ks.setKeyEntry(
        "server",
        server.keys().getPrivate(),
        "s3cret".toCharArray(),
        new Certificate[] {server.cert()});
    try (OutputStream out = Files.newOutputStream(p12)) {
      ks.store(out, "s3cret".toCharArray());
    }
    TlsSettings good = new TlsSettings(null, null, p12, "s3cret", null, Duration.ofSeconds(5));
    TlsSettings bad = new TlsSettings(null, null, p12, "wrong", null, Duration.ofSeconds(5));

    assertThat(ServerTls.check(good)).isTrue();
    try (ServerTls tls = ServerTls.create(good, List.of())) {
      assertThat(tls.clientCertificates()).isFalse();
    }
    assertThatThrownBy(() -> ServerTls.check(bad))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("keystore_password");
    assertThat(
            ConfigPrinter.toYaml(
                parse(
                    source(
                        "{ principal_header: X-P }",
                        "{ tls: { keystore: \"" + p12 + "\", keystore_password: s3cret } }"))))
        .doesNotContain("s3cret")
        .contains("keystore_password: '***'");
  }
}
