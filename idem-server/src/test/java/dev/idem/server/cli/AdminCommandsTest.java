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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code idem dead-letters ...} and {@code idem explain} against a running service. */
class AdminCommandsTest {
  static final String TOKEN = "cli-admin-commands-token";
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
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
    Run r = idem("dead-letters", "list", "orders");
    assertThat(r.code()).as(r.err()).isZero();
    return JSON.readTree(r.out()).get("dead_letters");
  }

  long deadLetterWithBodyId(String bodyId) throws Exception {
    for (JsonNode dl : listed()) {
      if (bodyId.equals(dl.path("body").path("id").asText())) {
        return dl.get("id").asLong();
      }
    }
    throw new AssertionError("no dead letter with body id " + bodyId + " in " + listed());
  }

  @Test
  void deadLettersAreListedShownRequeuedAndPurgedFromTheCommandLine() throws Exception {
    // given two dead letters
    receiver.respond(400, "{\"error\":\"no\"}");
    Http http = new Http(server.uri());
    http.post("/hooks/orders", "{\"id\":\"c-1\"}");
    http.post("/hooks/orders", "{\"id\":\"c-2\"}");
    await().atMost(Duration.ofSeconds(20)).until(() -> listed().size() == 2);
    // async deliveries fail in either order: find each dead letter by its body
    long first = deadLetterWithBodyId("c-1");
    long second = deadLetterWithBodyId("c-2");

    // show
    Run show = idem("dead-letters", "show", "orders", Long.toString(first));
    assertThat(show.code()).isZero();
    assertThat(JSON.readTree(show.out()).get("body").get("id").asText()).isEqualTo("c-1");

    // requeue, and it is delivered
    receiver.respond(200, "{}");
    Run requeue = idem("dead-letters", "requeue", "orders", Long.toString(first));
    assertThat(requeue.code()).as(requeue.err()).isZero();
    assertThat(JSON.readTree(requeue.out()).get("requeued").asBoolean()).isTrue();
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> receiver.received().stream().anyMatch(r -> r.body().contains("c-1")));

    // purge needs ids or --all
    assertThat(idem("dead-letters", "purge", "orders").code()).isEqualTo(2);
    Run purge = idem("dead-letters", "purge", "orders", "--all");
    assertThat(purge.code()).isZero();
    assertThat(JSON.readTree(purge.out()).get("purged").asLong()).isEqualTo(1);
    assertThat(listed()).isEmpty();

    // a gone dead letter is an error with the API's message
    Run gone = idem("dead-letters", "show", "orders", Long.toString(second));
    assertThat(gone.code()).isEqualTo(1);
    assertThat(gone.err()).contains("has no dead letter").contains("404");
  }

  @Test
  void explainPrintsTheDecisionAndWhy() throws Exception {
    Path event = Files.writeString(dir.resolve("event.json"), "{\"id\":\"x-1\"}");
    Run fresh = idem("explain", "orders", "--event", event.toString(), "-H", "X-Trace: 1");
    assertThat(fresh.code()).as(fresh.err()).isZero();
    assertThat(JSON.readTree(fresh.out()).get("decision").asText()).isEqualTo("pass");

    new Http(server.uri()).post("/hooks/orders", "{\"id\":\"x-1\"}");
    Run dup = idem("explain", "orders", "--event", event.toString());
    assertThat(JSON.readTree(dup.out()).get("decision").asText()).isEqualTo("duplicate");
  }

  @Test
  void aWrongTokenOrNoServiceIsOneClearLine() {
    CommandLine cl = IdemCli.commandLine();
    StringWriter err = new StringWriter();
    cl.setErr(new PrintWriter(err, true));
    cl.setOut(new PrintWriter(new StringWriter(), true));
    int code =
        cl.execute(
            "dead-letters", "list", "orders", "--url", server.uri().toString(), "--token", "no");
    assertThat(code).isEqualTo(1);
    assertThat(err.toString()).contains("admin token").contains("401");
  }
}
