package dev.idem.server.cli;

import static dev.idem.server.cli.IdemCliTest.idem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.key.KeyEncoding;
import dev.idem.key.KeyPart;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.cli.IdemCliTest.Run;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import dev.idem.server.tenant.TenantKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code idem key --tenant} and {@code inspect}/{@code forget --tenant} (issue 15). */
class TenantCliTest {
  @TempDir Path dir;

  private Path config() throws Exception {
    Path p = dir.resolve("idem.yaml");
    Files.writeString(
        p,
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: rocksdb, path: "%s" }
        pipelines:
          - id: orders
            tenant: header("X-Tenant")
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id, window: forever }
            deliver: { stdout: {} }
          - id: plain
            source: { webhook: { path: /hooks/plain } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
        """
            .formatted(dir.resolve("data")));
    return p;
  }

  @Test
  void keyShowsTheTenantItsScopeAndTheTenantsKey() throws Exception {
    Path config = config();
    Path event = dir.resolve("event.json");
    Files.writeString(event, "{\"id\":\"ord-7\"}");
    String expected = TenantKeys.key("acme", KeyEncoding.of(KeyPart.stringField("ord-7"))).toHex();

    Run fromHeader =
        idem(
            "key",
            "-c",
            config.toString(),
            "--pipeline",
            "orders",
            "--event",
            event.toString(),
            "-H",
            "X-Tenant: acme");
    Run given =
        idem(
            "key",
            "-c",
            config.toString(),
            "--pipeline",
            "orders",
            "--event",
            event.toString(),
            "--tenant",
            "acme");
    Run none =
        idem("key", "-c", config.toString(), "--pipeline", "orders", "--event", event.toString());
    Run plain =
        idem(
            "key",
            "-c",
            config.toString(),
            "--pipeline",
            "plain",
            "--event",
            event.toString(),
            "--tenant",
            "acme");

    assertThat(fromHeader.code()).as(fromHeader.err()).isZero();
    assertThat(fromHeader.out())
        .contains("tenant:          acme")
        .contains("scope:           " + TenantKeys.scopeOf("orders", "acme"))
        .contains("key:             " + expected)
        .contains("scoped per tenant");
    assertThat(given.out()).contains("key:             " + expected);
    assertThat(none.code()).isNotZero();
    assertThat(none.err()).contains("no tenant: header X-Tenant is missing");
    assertThat(plain.code()).isNotZero();
    assertThat(plain.err()).contains("has no tenant setting");
  }

  @Test
  void inspectAndForgetTakeATenant() throws Exception {
    Path config = config();
    IdemConfig c = ConfigLoader.load(config);
    try (IdemServer server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new TestEdge(), TimeSource.system()))) {
      new Http(server.uri()).post("/hooks/orders", "{\"id\":\"ord-7\"}", "X-Tenant", "acme");
    }
    String cfg = config.toString();

    Run acme = idem("inspect", "-c", cfg, "--pipeline", "orders", "--tenant", "acme", "ord-7");
    Run globex = idem("inspect", "-c", cfg, "--pipeline", "orders", "--tenant", "globex", "ord-7");
    Run noTenant = idem("inspect", "-c", cfg, "--pipeline", "orders", "ord-7");
    Run forgot = idem("forget", "-c", cfg, "--pipeline", "orders", "--tenant", "acme", "ord-7");
    Run after = idem("inspect", "-c", cfg, "--pipeline", "orders", "--tenant", "acme", "ord-7");

    assertThat(acme.code()).as(acme.err()).isZero();
    assertThat(acme.out()).contains("\"state\" : \"committed\"").contains("\"expires_at\" : null");
    assertThat(globex.out()).contains("\"state\" : \"absent\"");
    assertThat(noTenant.code()).isNotZero();
    assertThat(noTenant.err()).contains("--tenant");
    assertThat(forgot.out()).contains("\"forgotten\" : true");
    assertThat(after.out()).contains("\"state\" : \"absent\"");
  }
}
