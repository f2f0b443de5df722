package dev.idem.server.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.idem.TimeSource;
import dev.idem.key.KeyRule;
import dev.idem.key.Principal;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class IdemCliTest {
  @TempDir Path dir;

  record Run(int code, String out, String err) {}

  static Run idem(String... args) {
    CommandLine cl = IdemCli.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  Path write(String name, String text) throws Exception {
    Path p = dir.resolve(name);
    Files.writeString(p, text);
    return p;
  }

  String rocksConfig() {
    return """
        server: { host: 127.0.0.1, port: 0, admin_token: cli-test-admin-token }
        store: { type: rocksdb, path: %s }
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id, window: 1h }
            deliver: { stdout: {} }
          - id: pairs
            source: { webhook: { path: /hooks/pairs } }
            dedup: { key: [source.shop, source.n] }
            deliver: { stdout: {} }
        """
        .formatted(dir.resolve("data"));
  }

  @Test
  void checkConfigPrintsTheEffectiveConfigWithSecretsMasked() throws Exception {
    Path config = write("idem.yaml", rocksConfig());

    Run r = idem("check-config", config.toString());

    assertThat(r.code()).isZero();
    assertThat(r.out())
        .contains("admin_token: '***'")
        .contains("durability: group-commit")
        .contains("window: 1h")
        .doesNotContain("cli-test-admin-token");
    assertThat(r.err()).contains("is valid (2 pipelines)");
  }

  /**
   * Issue 9 §2 warned of a lease shorter than a sync delivery's worst case; since the service
   * renews a lease while its work runs (issue 11), a short lease is the point, not a risk.
   */
  @Test
  void checkConfigNoLongerWarnsOfALeaseShorterThanASyncDelivery() throws Exception {
    Path config =
        write(
            "short-lease.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: slow
                source: { webhook: { path: /slow } }
                dedup: { key: source.id, lease: 30s }
                deliver:
                  retries: 3
                  backoff: 1s
                  max_backoff: 4s
                  http: { url: "http://127.0.0.1:9/x", timeout: 10s }
            """);

    Run r = idem("check-config", config.toString());

    // 4 attempts of 10s + backoffs of 1s, 2s and 4s: 47s, longer than the lease, which is renewed
    assertThat(r.code()).isZero();
    assertThat(r.err()).doesNotContain("warning").contains("is valid (1 pipeline)");
  }

  @Test
  void checkConfigReportsEveryProblemWithItsPlaceAndFails() throws Exception {
    Path config =
        write(
            "bad.yaml",
            """
            pipelines:
              - id: p
                source: { webhook: { path: /p } }
                dedup: { expiry: slidin, windw: 1h }
                deliver: { stdout: {} }
            """);

    Run r = idem("check-config", config.toString());

    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err())
        .contains(config + ":4:30: pipelines[0].dedup.windw: unknown key 'windw'")
        .doesNotContain("Exception");
  }

  @Test
  void checkConfigReportsAnUnknownKeyAndABadValueInOneRun() throws Exception {
    // Issue 8: the typo'd key used to hide expiry: slidin until the next run
    Path config =
        write(
            "bad.yaml",
            """
            pipelines:
              - id: p
                source:
                  webhook:
                    path: /p
                    signature: { scheme: standard, secret: "whsec_not base64!", tolerance: 106751991168d }
                dedup: { expiry: slidin, windw: 1h }
                deliver: { stdout: {} }
            """);

    Run r = idem("check-config", config.toString());

    assertThat(r.code()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().lines())
        .containsExactly(
            config
                + ":6:40: pipelines[0].source.webhook.signature.secret: a secret for scheme"
                + " standard must be whsec_ followed by base64 (as the sender shows it, e.g."
                + " whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw); the value given is not base64",
            config
                + ":6:69: pipelines[0].source.webhook.signature.tolerance: must be at most 1d, got"
                + " 106751991168d; use a shorter one",
            config
                + ":7:14: pipelines[0].dedup.expiry: 'slidin' is not allowed; use sliding or fixed",
            config
                + ":7:30: pipelines[0].dedup.windw: unknown key 'windw'; allowed here: expiry,"
                + " key, lease, max_keys, mode, store, window");
  }

  @Test
  void noArgumentsPrintsTheUsageAndExitsTwo() {
    Run r = idem();

    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("give a command").contains("Usage: idem").contains("serve");
    assertThat(idem("--help").code()).isZero();
  }

  @Test
  void aPortInUseIsOneClearLineAndExitsOne() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      int port = taken.getLocalPort();
      Path config =
          write(
              "idem.yaml",
              """
              server: { host: 127.0.0.1, port: %d }
              store: { type: memory }
              pipelines:
                - id: p
                  source: { webhook: { path: /p } }
                  deliver: { stdout: {} }
              """
                  .formatted(port));

      // Guards against a hang should the port unexpectedly bind (serve then runs until stopped)
      Run r =
          assertTimeoutPreemptively(
              Duration.ofMinutes(2), () -> idem("serve", "--config", config.toString()));

      assertThat(r.code()).isEqualTo(1);
      assertThat(r.err())
          .isEqualTo(
              "idem: port "
                  + port
                  + " is in use; stop the other process or set server.port (or --port)"
                  + System.lineSeparator());
    }
  }

  @Test
  void keyPrintsTheDigestAndTheRuleOfAnEvent() throws Exception {
    Path config = write("idem.yaml", rocksConfig());
    Path event = write("event.json", "{\"id\":\"ord-1\",\"total\":3}");
    IdemConfig c = ConfigLoader.load(config);
    String expected =
        ServiceAssembly.keys(
                c.pipeline("orders").orElseThrow(), new TestEdge(), TimeSource.system())
            .fromRaw("ord-1")
            .toHex();

    Run r =
        idem(
            "key",
            "--config",
            config.toString(),
            "--pipeline",
            "orders",
            "--event",
            event.toString());
    Run missing =
        idem("key", "-c", config.toString(), "--pipeline", "pairs", "--event", event.toString());

    assertThat(r.code()).isZero();
    assertThat(r.out())
        .contains("rule:            dedup.key source.id")
        .contains("key:             " + expected)
        .contains("idempotency-key: orders:" + expected);
    assertThat(missing.code()).isEqualTo(1);
    assertThat(missing.err()).contains("no key:");
  }

  @Test
  void keyOfAJwtPipelineShowsAndUsesTheGivenPrincipalChain() throws Exception {
    Path config =
        write(
            "jwt.yaml",
            """
            store: { type: memory }
            pipelines:
              - id: internal
                source:
                  webhook:
                    path: /in
                    auth: { jwt: { secret: "0123456789abcdef0123456789abcdef", algorithms: [HS256] } }
                dedup: {}
                deliver: { stdout: {} }
            """);
    Path event = write("event.json", "{\"b\":2,\"a\":1}");
    String expected =
        KeyRule.defaultKey()
            .derive(
                new InboundRequest(
                    "{\"a\":1,\"b\":2}".getBytes(StandardCharsets.UTF_8),
                    h -> null,
                    List.of(
                        new Principal("https://idp", "alice"), new Principal("https://idp", "gw"))))
            .toHex();

    Run delegated =
        idem(
            "key",
            "-c",
            config.toString(),
            "--pipeline",
            "internal",
            "--event",
            event.toString(),
            "--caller",
            "https://idp",
            "alice",
            "--caller",
            "https://idp",
            "gw");
    Run direct =
        idem(
            "key",
            "-c",
            config.toString(),
            "--pipeline",
            "internal",
            "--event",
            event.toString(),
            "--caller",
            "https://idp",
            "alice");
    Run noChain =
        idem("key", "-c", config.toString(), "--pipeline", "internal", "--event", event.toString());

    assertThat(delegated.code()).as(delegated.err()).isZero();
    assertThat(delegated.out())
        .contains("chain:           (https://idp, alice) -> (https://idp, gw)")
        .contains("key:             " + expected);
    assertThat(direct.out()).doesNotContain(expected).contains("(https://idp, alice)");
    assertThat(noChain.code()).isNotZero();
    assertThat(noChain.err()).contains("give it with --caller ISSUER SUBJECT");
  }

  @Test
  void inspectAndForgetWorkOnTheConfiguredStoreByRawValue() throws Exception {
    Path config = write("idem.yaml", rocksConfig());
    IdemConfig c = ConfigLoader.load(config);
    try (IdemServer server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new TestEdge(), TimeSource.system()))) {
      Http http = new Http(server.uri());
      http.post("/hooks/orders", "{\"id\":\"ord-7\"}");
      http.post("/hooks/pairs", "{\"shop\":\"s1\",\"n\":42}");
    }

    Run committed = idem("inspect", "-c", config.toString(), "--pipeline", "orders", "ord-7");
    Run pair = idem("inspect", "-c", config.toString(), "--pipeline", "pairs", "[\"s1\",42]");
    Run forgot = idem("forget", "-c", config.toString(), "--pipeline", "orders", "ord-7");
    Run absent = idem("inspect", "-c", config.toString(), "--pipeline", "orders", "ord-7");

    assertThat(committed.code()).as(committed.err()).isZero();
    assertThat(committed.out()).contains("\"state\" : \"committed\"").contains("\"committed_at\"");
    assertThat(pair.out()).contains("\"state\" : \"committed\"");
    assertThat(forgot.out()).contains("\"forgotten\" : true");
    assertThat(absent.out()).contains("\"state\" : \"absent\"");
  }

  @Test
  void anUnknownPipelineNamesTheKnownOnes() throws Exception {
    Path config = write("idem.yaml", rocksConfig());

    Run r = idem("inspect", "-c", config.toString(), "--pipeline", "nope", "x");

    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("no pipeline 'nope'").contains("orders, pairs");
  }
}
