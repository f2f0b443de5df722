package dev.idem.server.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code idem blocked-keys list|skip|retry} against a running service (issue 11). */
class BlockedKeysCommandsTest {
  static final String TOKEN = "cli-blocked-keys-token";
  static final ObjectMapper JSON = new ObjectMapper();

  Receiver receiver;
  IdemServer server;

  record Run(int code, String out, String err) {}

  @BeforeEach
  void start() {
    receiver = new Receiver();
    IdemConfig c =
        ConfigLoader.parse(
            "cli.yaml",
            """
            server: { host: 127.0.0.1, port: 0, admin_token: %s }
            store: { type: memory }
            pipelines:
              - id: orders
                source: { webhook: { path: /hooks/orders } }
                dedup: { key: source.id }
                ordering: { key: customer, on_failure: block }
                deliver:
                  mode: async
                  retries: 0
                  http: { url: "%s", timeout: 2s }
            """
                .formatted(TOKEN, receiver.uri("/orders")),
            n -> null);
    server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()));
  }

  @AfterEach
  void stop() {
    server.close();
    receiver.close();
  }

  Run idem(String... args) {
    CommandLine cl = IdemCli.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    String[] all = new String[args.length + 4];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--url";
    all[args.length + 1] = server.uri().toString();
    all[args.length + 2] = "--token";
    all[args.length + 3] = TOKEN;
    int code = cl.execute(all);
    return new Run(code, out.toString(), err.toString());
  }

  JsonNode listed() throws Exception {
    Run r = idem("blocked-keys", "list", "orders");
    assertThat(r.code()).as(r.err()).isZero();
    return JSON.readTree(r.out()).get("blocked_keys");
  }

  @Test
  void blockedKeysAreListedRetriedAndSkippedFromTheCommandLine() throws Exception {
    // given two customers' events refused for good: both keys blocked
    receiver.respond(400, "{\"error\":\"no\"}");
    Http http = new Http(server.uri());
    http.post("/hooks/orders", "{\"id\":\"o-1\",\"customer\":\"c-1\"}");
    http.post("/hooks/orders", "{\"id\":\"o-2\",\"customer\":\"c-2\"}");
    await().atMost(Duration.ofSeconds(20)).until(() -> listed().size() == 2);
    receiver.respond(200, "{}");
    String first = listed().get(0).get("ordering_key").asText();
    String second = listed().get(1).get("ordering_key").asText();

    // retry one: delivered again
    Run retry = idem("blocked-keys", "retry", "orders", first);
    assertThat(retry.code()).as(retry.err()).isZero();
    assertThat(JSON.readTree(retry.out()).get("retried").asBoolean()).isTrue();

    // skip the other: a dead letter
    Run skip = idem("blocked-keys", "skip", "orders", second);
    assertThat(skip.code()).as(skip.err()).isZero();
    assertThat(JSON.readTree(skip.out()).get("skipped").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(20)).until(() -> listed().isEmpty());
    Run dead = idem("dead-letters", "list", "orders");
    assertThat(JSON.readTree(dead.out()).get("dead_letters")).hasSize(1);

    // a key that is not blocked is an error with the API's message; no subcommand is usage
    Run gone = idem("blocked-keys", "skip", "orders", second);
    assertThat(gone.code()).isEqualTo(1);
    assertThat(gone.err()).contains("is not blocked").contains("404");
    assertThat(IdemCli.commandLine().execute("blocked-keys")).isEqualTo(2);
  }
}
