package dev.idem.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.IdemConfigException;
import dev.idem.IdemException;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The commands that act on a running service through its admin API: {@code idem dead-letters
 * list|show|requeue|purge}, {@code idem blocked-keys list|skip|retry} and {@code idem explain}.
 * Each takes the service's address ({@code --url}, or {@code IDEM_URL}, default {@code
 * http://127.0.0.1:8080}) and the admin token ({@code IDEM_ADMIN_TOKEN}, or {@code --token}, which
 * other users of the machine can see in the process list), prints the API's JSON answer on standard
 * output and exits 0, or prints the API's error message and exits 1.
 */
final class AdminCommands {
  private static final ObjectMapper JSON = new ObjectMapper();

  private AdminCommands() {}

  /** The service's address and token, shared by every admin command. */
  static final class Target {
    @Option(
        names = "--url",
        paramLabel = "URL",
        defaultValue = "${env:IDEM_URL:-http://127.0.0.1:8080}",
        description = "the running service (default: $IDEM_URL or http://127.0.0.1:8080)")
    String url;

    @Option(
        names = "--token",
        paramLabel = "TOKEN",
        defaultValue = "${env:IDEM_ADMIN_TOKEN}",
        description =
            "the admin token (server.admin_token; default: $IDEM_ADMIN_TOKEN, which keeps it out"
                + " of the process list)")
    @Nullable String token;

    /** Sends one admin request; returns the answer's JSON or throws with its message. */
    JsonNode call(String method, String path, @Nullable String body) {
      if (token == null || token.isBlank()) {
        throw new IdemConfigException(
            "no admin token: set IDEM_ADMIN_TOKEN (or give --token) to the service's"
                + " server.admin_token");
      }
      URI uri;
      try {
        uri = URI.create(url.replaceAll("/+$", "") + path);
      } catch (IllegalArgumentException e) {
        throw new IdemConfigException("--url '" + url + "' is not a URL: " + e.getMessage());
      }
      HttpRequest.Builder b =
          HttpRequest.newBuilder(uri)
              .timeout(Duration.ofSeconds(30))
              .header("Authorization", "Bearer " + token)
              .header("Accept", "application/json");
      if (body != null) {
        b.header("Content-Type", "application/json");
      }
      b.method(
          method,
          body == null
              ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofString(body));
      HttpResponse<String> r;
      try {
        r =
            HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(10))
                .build()
                .send(b.build(), HttpResponse.BodyHandlers.ofString());
      } catch (ConnectException e) {
        throw new IdemException(
            "cannot reach the service at " + url + "; is `idem serve` running there? (--url)");
      } catch (IOException e) {
        throw new IdemException("the request to " + uri + " failed: " + e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IdemException("interrupted");
      }
      JsonNode answer;
      try {
        answer = JSON.readTree(r.body());
      } catch (IOException e) {
        answer = null;
      }
      if (r.statusCode() / 100 != 2) {
        String message =
            answer != null && answer.has("message")
                ? answer.get("message").asText()
                : "HTTP " + r.statusCode() + " from " + uri;
        throw new IdemException(message + " (HTTP " + r.statusCode() + ")");
      }
      if (answer == null) {
        throw new IdemException("the service's answer is not JSON (HTTP " + r.statusCode() + ")");
      }
      return answer;
    }
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static void print(CommandLine.Model.CommandSpec spec, JsonNode n) {
    PrintWriter out = spec.commandLine().getOut();
    try {
      out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(n));
    } catch (IOException e) {
      out.println(n);
    }
    out.flush();
  }

  /** {@code idem dead-letters}: the group; without a subcommand, its usage. */
  @Command(
      name = "dead-letters",
      mixinStandardHelpOptions = true,
      description = "List, show, requeue or purge a pipeline's dead letters on a running service.",
      subcommands = {
        DeadLetters.List.class,
        DeadLetters.Show.class,
        DeadLetters.Requeue.class,
        DeadLetters.Purge.class
      })
  static final class DeadLetters implements Callable<Integer> {
    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      PrintWriter err = spec.commandLine().getErr();
      err.println("idem dead-letters: give list, show, requeue or purge");
      spec.commandLine().usage(err);
      err.flush();
      return IdemCli.USAGE;
    }

    /** {@code idem dead-letters list PIPELINE}. */
    @Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description = "List dead letters, newest first, a page at a time.")
    static final class List implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Option(names = "--limit", defaultValue = "100", description = "the page size (1-10000)")
      int limit;

      @Option(
          names = "--since",
          paramLabel = "TIME",
          description = "only those given up at or after TIME (ISO-8601 or epoch ms)")
      @Nullable String since;

      @Option(
          names = "--until",
          paramLabel = "TIME",
          description = "only those given up before TIME (ISO-8601 or epoch ms)")
      @Nullable String until;

      @Option(
          names = "--after",
          paramLabel = "CURSOR",
          description = "the page after this cursor (the 'next' of the previous page)")
      @Nullable String after;

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        StringBuilder q = new StringBuilder("?limit=").append(limit);
        if (since != null) {
          q.append("&since=").append(enc(since));
        }
        if (until != null) {
          q.append("&until=").append(enc(until));
        }
        if (after != null) {
          q.append("&after=").append(enc(after));
        }
        print(
            spec,
            target.call("GET", "/admin/pipelines/" + enc(pipeline) + "/dead-letters" + q, null));
        return 0;
      }
    }

    /** {@code idem dead-letters show PIPELINE ID}. */
    @Command(
        name = "show",
        mixinStandardHelpOptions = true,
        description = "Show one dead letter: its event, key, attempts, last error.")
    static final class Show implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Parameters(index = "1", paramLabel = "ID", description = "the dead letter's id")
      long id;

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        print(
            spec,
            target.call("GET", "/admin/pipelines/" + enc(pipeline) + "/dead-letters/" + id, null));
        return 0;
      }
    }

    /** {@code idem dead-letters requeue PIPELINE ID...}. */
    @Command(
        name = "requeue",
        mixinStandardHelpOptions = true,
        description =
            "Deliver dead letters again through the outbox, with their Idempotency-Key; their"
                + " keys stay committed.")
    static final class Requeue implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Parameters(
          index = "1..*",
          arity = "1..*",
          paramLabel = "ID",
          description = "dead letter ids")
      java.util.List<Long> ids = new ArrayList<>();

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        for (long id : ids) {
          print(
              spec,
              target.call(
                  "POST",
                  "/admin/pipelines/" + enc(pipeline) + "/dead-letters/" + id + "/requeue",
                  ""));
        }
        return 0;
      }
    }

    /** {@code idem dead-letters purge PIPELINE (ID... | --all)}. */
    @Command(
        name = "purge",
        mixinStandardHelpOptions = true,
        description = "Delete dead letters for good: the given ids, or --all of the pipeline's.")
    static final class Purge implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Parameters(
          index = "1..*",
          arity = "0..*",
          paramLabel = "ID",
          description = "dead letter ids")
      java.util.List<Long> ids = new ArrayList<>();

      @Option(names = "--all", description = "purge every dead letter of the pipeline")
      boolean all;

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        if (all == !ids.isEmpty()) {
          PrintWriter err = spec.commandLine().getErr();
          err.println("idem dead-letters purge: give dead letter ids, or --all (not both)");
          err.flush();
          return IdemCli.USAGE;
        }
        String base = "/admin/pipelines/" + enc(pipeline) + "/dead-letters";
        if (all) {
          print(spec, target.call("DELETE", base, null));
        }
        for (long id : ids) {
          print(spec, target.call("DELETE", base + "/" + id, null));
        }
        return 0;
      }
    }
  }

  /** {@code idem blocked-keys}: the group; without a subcommand, its usage. */
  @Command(
      name = "blocked-keys",
      mixinStandardHelpOptions = true,
      description =
          "List a pipeline's blocked ordering keys (poison keys) on a running service, or skip or"
              + " retry the event that blocks one.",
      subcommands = {BlockedKeys.List.class, BlockedKeys.Skip.class, BlockedKeys.Retry.class})
  static final class BlockedKeys implements Callable<Integer> {
    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      PrintWriter err = spec.commandLine().getErr();
      err.println("idem blocked-keys: give list, skip or retry");
      spec.commandLine().usage(err);
      err.flush();
      return IdemCli.USAGE;
    }

    /** {@code idem blocked-keys list PIPELINE}. */
    @Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description =
            "List the blocked ordering keys: key, since when, attempts, last error, the blocked"
                + " event (async: kept in the store, the same on every instance; sync: this"
                + " instance's).")
    static final class List implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        print(
            spec, target.call("GET", "/admin/pipelines/" + enc(pipeline) + "/blocked-keys", null));
        return 0;
      }
    }

    /** {@code idem blocked-keys skip PIPELINE ORDERING_KEY...}. */
    @Command(
        name = "skip",
        mixinStandardHelpOptions = true,
        description =
            "Give the blocking event up so its ordering key moves on (async: it becomes a dead"
                + " letter; sync: its key is committed).")
    static final class Skip implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Parameters(
          index = "1..*",
          arity = "1..*",
          paramLabel = "ORDERING_KEY",
          description = "ordering keys, as the list prints them")
      java.util.List<String> keys = new ArrayList<>();

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        for (String key : keys) {
          print(spec, unblock(target, pipeline, key, "skip"));
        }
        return 0;
      }
    }

    /** {@code idem blocked-keys retry PIPELINE ORDERING_KEY...}. */
    @Command(
        name = "retry",
        mixinStandardHelpOptions = true,
        description =
            "Try the blocking event again with its attempts reset; the key's later events still"
                + " wait behind it.")
    static final class Retry implements Callable<Integer> {
      @Mixin Target target;

      @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
      String pipeline;

      @Parameters(
          index = "1..*",
          arity = "1..*",
          paramLabel = "ORDERING_KEY",
          description = "ordering keys, as the list prints them")
      java.util.List<String> keys = new ArrayList<>();

      @Spec CommandLine.Model.CommandSpec spec;

      @Override
      public Integer call() {
        for (String key : keys) {
          print(spec, unblock(target, pipeline, key, "retry"));
        }
        return 0;
      }
    }

    private static JsonNode unblock(Target target, String pipeline, String key, String what) {
      return target.call(
          "POST",
          "/admin/pipelines/" + enc(pipeline) + "/blocked-keys/" + enc(key) + "/" + what,
          "");
    }
  }

  /** {@code idem explain PIPELINE --event FILE}. */
  @Command(
      name = "explain",
      mixinStandardHelpOptions = true,
      description =
          "Ask a running service what a pipeline would do with an event, and why (changes"
              + " nothing).")
  static final class Explain implements Callable<Integer> {
    @Mixin Target target;

    @Parameters(index = "0", paramLabel = "PIPELINE", description = "the pipeline id")
    String pipeline;

    @Option(
        names = "--event",
        required = true,
        paramLabel = "FILE",
        description = "the raw event body; - reads standard input")
    String event;

    @Option(
        names = {"-H", "--header"},
        paramLabel = "NAME:VALUE",
        description = "a request header of the event (repeatable), e.g. -H 'X-Id: 42'")
    java.util.List<String> headers = new ArrayList<>();

    @Option(
        names = "--caller",
        arity = "2",
        paramLabel = "ISSUER SUBJECT",
        description = "a link of the caller's principal chain (repeatable), for auth.jwt")
    java.util.List<String> callers = new ArrayList<>();

    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
      byte[] body;
      try {
        body = event.equals("-") ? System.in.readAllBytes() : Files.readAllBytes(Path.of(event));
      } catch (NoSuchFileException e) {
        throw new IdemConfigException("--event " + event + ": no such file");
      }
      ObjectNode req = JSON.createObjectNode();
      // Base64 keeps the body byte for byte (a signature covers the exact bytes).
      req.put("body_base64", java.util.Base64.getEncoder().encodeToString(body));
      ObjectNode h = req.putObject("headers");
      for (String header : headers) {
        int colon = header.indexOf(':');
        if (colon <= 0) {
          throw new IdemConfigException(
              "--header '" + header + "' is not NAME:VALUE (e.g. 'X-Id: 42')");
        }
        h.put(header.substring(0, colon).trim(), header.substring(colon + 1).trim());
      }
      ArrayNode chain = req.putArray("principals");
      for (int i = 0; i + 1 < callers.size(); i += 2) {
        chain.addObject().put("issuer", callers.get(i)).put("subject", callers.get(i + 1));
      }
      JsonNode answer =
          target.call(
              "POST",
              "/admin/pipelines/" + enc(pipeline) + "/explain",
              JSON.writeValueAsString(req));
      print(spec, answer);
      return 0;
    }
  }
}
