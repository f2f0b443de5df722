package dev.idem.server.cli;

import ch.qos.logback.classic.Level;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.IdemConfigException;
import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.StoreUnavailableException;
import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.DefaultEdge;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.ServiceRuntime;
import dev.idem.server.config.ConfigException;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.ConfigPrinter;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.config.StoreSettings;
import dev.idem.server.http.AdminApi;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.tenant.TenantKeys;
import dev.idem.spi.DedupStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.BindException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The {@code idem} command: {@code serve}, {@code check-config}, {@code key}, {@code inspect},
 * {@code forget}, and against a running service's admin API {@code dead-letters
 * list|show|requeue|purge}, {@code blocked-keys list|skip|retry} and {@code explain} ({@link
 * AdminCommands}). Exit codes: 0 done, 1 the command failed (bad config, no key, store error, port
 * in use), 2 bad usage (including {@code idem} with no command, which prints the usage). A failure
 * is printed as one line per problem, never a stack trace.
 */
@Command(
    name = "idem",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCli.Version.class,
    description = "Deduplicates and orders webhooks, and delivers each event once.",
    subcommands = {
      IdemCli.Serve.class,
      IdemCli.CheckConfig.class,
      IdemCli.KeyCommand.class,
      IdemCli.Inspect.class,
      IdemCli.Forget.class,
      AdminCommands.DeadLetters.class,
      AdminCommands.BlockedKeys.class,
      AdminCommands.Explain.class
    })
public final class IdemCli implements Callable<Integer> {
  /** The exit code of bad usage, as picocli uses for unknown options. */
  static final int USAGE = CommandLine.ExitCode.USAGE;

  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec CommandLine.Model.CommandSpec spec;

  /** Creates the top-level command (picocli calls it). */
  public IdemCli() {}

  /**
   * Runs the command line and exits with its code (unless it is {@code serve}, which returns when
   * the service stops).
   *
   * @param args the arguments
   */
  public static void main(String[] args) {
    int code = run(args);
    System.exit(code);
  }

  /**
   * Runs the command line.
   *
   * @param args the arguments
   * @return the exit code
   */
  public static int run(String... args) {
    return commandLine().execute(args);
  }

  /**
   * Returns the configured picocli command line, for tests that capture its output.
   *
   * @return the command line
   */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new IdemCli());
    cl.setExecutionExceptionHandler(
        (e, line, parsed) -> {
          PrintWriter err = line.getErr();
          if (e instanceof ConfigException ce) {
            ce.problems().forEach(err::println);
          } else if (e instanceof IdemException) {
            err.println("idem: " + e.getMessage());
          } else {
            err.println("idem: " + e);
          }
          err.flush();
          return 1;
        });
    return cl;
  }

  /** {@code idem} without a command: the usage, on standard error, and exit code 2. */
  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println(
        "idem: give a command (serve, check-config, key, inspect, forget, dead-letters,"
            + " blocked-keys or explain)");
    spec.commandLine().usage(err);
    err.flush();
    return USAGE;
  }

  private static IdemConfig load(Path file) {
    return ConfigLoader.load(file);
  }

  private static PipelineSettings pipeline(IdemConfig config, String id) {
    return config
        .pipeline(id)
        .orElseThrow(
            () ->
                new IdemConfigException(
                    "no pipeline '"
                        + id
                        + "' in the config; known: "
                        + String.join(
                            ", ", config.pipelines().stream().map(PipelineSettings::id).toList())));
  }

  /** Prints the version from the jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = IdemCli.class.getPackage().getImplementationVersion();
      return new String[] {"idem " + (v == null ? "(development build)" : v)};
    }
  }

  /** {@code idem serve --config FILE}. */
  @Command(
      name = "serve",
      mixinStandardHelpOptions = true,
      description = "Runs the service until stopped (SIGTERM or Ctrl-C stop it gracefully).")
  static final class Serve implements Callable<Integer> {
    @Option(
        names = {"-c", "--config"},
        required = true,
        paramLabel = "FILE",
        description = "the YAML config (e.g. examples/quickstart.yaml)")
    Path config;

    @Option(
        names = "--port",
        paramLabel = "PORT",
        description = "listen on this port instead of server.port")
    @Nullable Integer port;

    @Override
    public Integer call() throws InterruptedException {
      IdemConfig c = load(config);
      ServerSettings s = c.server();
      if (port != null) {
        s = s.withPort(port);
      }
      applyLogLevel(s.logLevel());
      ServiceRuntime runtime =
          ServiceAssembly.assemble(c, new DefaultEdge(), ServiceAssembly.clock());
      IdemServer server = start(s, runtime);
      CountDownLatch stopped = new CountDownLatch(1);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    server.close();
                    stopped.countDown();
                  },
                  "idem-shutdown"));
      stopped.await();
      return 0;
    }

    /** Starts the listener; a port in use is one clear line, not an exception's text. */
    private static IdemServer start(ServerSettings s, ServiceRuntime runtime) {
      try {
        return IdemServer.start(s, runtime);
      } catch (IllegalStateException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
          if (t instanceof BindException) {
            throw new IdemException(
                "port "
                    + s.port()
                    + " is in use; stop the other process or set server.port (or --port)");
          }
        }
        throw new IdemException(e.getMessage());
      }
    }

    private static void applyLogLevel(@Nullable String level) {
      if (level == null) {
        return;
      }
      if (LoggerFactory.getLogger("dev.idem") instanceof ch.qos.logback.classic.Logger l) {
        l.setLevel(Level.toLevel(level.toUpperCase(Locale.ROOT), Level.INFO));
      }
    }
  }

  /** {@code idem check-config FILE}. */
  @Command(
      name = "check-config",
      mixinStandardHelpOptions = true,
      description =
          "Validates a config and prints the effective config (defaults filled in, secrets"
              + " masked). Every problem is printed as file:line:col: field: what is allowed.")
  static final class CheckConfig implements Callable<Integer> {
    @Parameters(paramLabel = "FILE", description = "the YAML config")
    Path file;

    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      IdemConfig c = load(file);
      PrintWriter out = spec.commandLine().getOut();
      out.print(ConfigPrinter.toYaml(c));
      out.flush();
      PrintWriter err = spec.commandLine().getErr();
      err.println(
          "idem: "
              + file
              + " is valid ("
              + c.pipelines().size()
              + (c.pipelines().size() == 1 ? " pipeline)" : " pipelines)"));
      err.flush();
      return 0;
    }
  }

  /** {@code idem key --config FILE --pipeline ID --event FILE [--header K:V ...]}. */
  @Command(
      name = "key",
      mixinStandardHelpOptions = true,
      description =
          "Prints the key an event gets in a pipeline (its digest and the rule that made it), to"
              + " debug key rules. Does not verify signatures and touches no store.")
  static final class KeyCommand implements Callable<Integer> {
    @Option(
        names = {"-c", "--config"},
        required = true,
        paramLabel = "FILE",
        description = "the YAML config")
    Path config;

    @Option(names = "--pipeline", required = true, paramLabel = "ID", description = "pipeline id")
    String pipeline;

    @Option(
        names = "--event",
        required = true,
        paramLabel = "FILE",
        description = "the event body (JSON); - reads standard input")
    String event;

    @Option(
        names = {"-H", "--header"},
        paramLabel = "NAME:VALUE",
        description = "a request header (repeatable), e.g. -H 'X-GitHub-Delivery: 72d3162e'")
    List<String> headers = new ArrayList<>();

    @Option(
        names = "--caller",
        arity = "2",
        paramLabel = "ISSUER SUBJECT",
        description =
            "a link of the caller's principal chain (repeatable: the token's iss and sub, then"
                + " each act's, outermost first), for a pipeline with auth.jwt (or auth.mtls:"
                + " the certificate's issuer and subject DN; auth.principal_header: its links)")
    List<String> callers = new ArrayList<>();

    @Option(
        names = "--tenant",
        paramLabel = "TENANT",
        description =
            "the event's tenant, for a pipeline with tenant (default: read from the event as the"
                + " service does; needed for claim(...) tenants)")
    String tenant;

    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
      IdemConfig c = load(config);
      PipelineSettings p = pipeline(c, pipeline);
      List<Principal> chain = new ArrayList<>();
      for (int i = 0; i + 1 < callers.size(); i += 2) {
        chain.add(new Principal(callers.get(i), callers.get(i + 1)));
      }
      boolean chainKeyed =
          p.webhook() != null
              && p.webhook().callers()
              && (p.dedup() == null || p.dedup().key() == null);
      if (chainKeyed && chain.isEmpty()) {
        throw new IdemConfigException(
            "pipeline "
                + p.id()
                + " keys events by the caller's principal chain (auth.jwt); give it with --caller"
                + " ISSUER SUBJECT, the caller first, then each act (auth.mtls: the certificate's"
                + " issuer DN and subject DN in RFC 2253 form)");
      }
      byte[] body = event.equals("-") ? System.in.readAllBytes() : readFile(Path.of(event));
      Map<String, String> h = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      for (String header : headers) {
        int colon = header.indexOf(':');
        if (colon <= 0) {
          throw new IdemConfigException(
              "--header '" + header + "' is not NAME:VALUE (e.g. 'X-Id: 42')");
        }
        h.put(header.substring(0, colon).trim(), header.substring(colon + 1).trim());
      }
      EventKeys keys = tenantKeys(p, tenant);
      PrintWriter out = spec.commandLine().getOut();
      DedupKey key;
      InboundRequest request = new InboundRequest(body, h::get, chain);
      String eventTenant = tenant;
      try {
        if (eventTenant == null && keys instanceof TenantKeys t) {
          eventTenant = t.tenantOf(request);
        }
        key = keys.derive(request);
      } catch (KeyDerivationException e) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("idem: no key: " + e.getMessage());
        err.flush();
        return 1;
      }
      out.println("pipeline:        " + p.id());
      out.println("rule:            " + keys.describe());
      if (chainKeyed) {
        out.println(
            "chain:           "
                + String.join(
                    " -> ",
                    chain.stream().map(l -> "(" + l.issuer() + ", " + l.subject() + ")").toList()));
      }
      if (eventTenant != null) {
        out.println("tenant:          " + eventTenant);
        out.println("scope:           " + TenantKeys.scopeOf(p.id(), eventTenant));
      }
      out.println("key:             " + key.toHex());
      out.println("idempotency-key: " + Pipeline.idempotencyKey(p.id(), key));
      out.flush();
      return 0;
    }
  }

  /**
   * A pipeline's key rule; with a tenant given, that tenant's keys.
   *
   * @throws IdemConfigException if a tenant is given for a pipeline without tenants
   */
  static EventKeys tenantKeys(PipelineSettings p, @Nullable String tenant) {
    EventKeys keys = ServiceAssembly.keys(p, new DefaultEdge(), TimeSource.system());
    if (tenant == null) {
      return keys;
    }
    if (!(keys instanceof TenantKeys t)) {
      throw new IdemConfigException(
          "pipeline " + p.id() + " has no tenant setting; remove --tenant");
    }
    return t.forTenant(tenant);
  }

  private static byte[] readFile(Path file) throws IOException {
    try {
      return Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new IdemConfigException("no such file: " + file);
    }
  }

  /** Shared by inspect and forget. */
  abstract static class KeyAdmin implements Callable<Integer> {
    @Option(
        names = {"-c", "--config"},
        required = true,
        paramLabel = "FILE",
        description = "the YAML config")
    Path config;

    @Option(names = "--pipeline", required = true, paramLabel = "ID", description = "pipeline id")
    String pipeline;

    @Option(
        names = "--digest",
        description = "KEY is the key's 64 hex digits (as `idem key` prints), not its raw value")
    boolean digest;

    @Option(
        names = "--tenant",
        paramLabel = "TENANT",
        description = "the key's tenant, for a pipeline with tenant (not needed with --digest)")
    String tenant;

    @Parameters(
        paramLabel = "KEY",
        description =
            "the raw key value (for a composite key the JSON array of its parts, e.g."
                + " '[\"shop-1\",\"42\"]')")
    String key;

    @Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      IdemConfig c = load(config);
      PipelineSettings p = pipeline(c, pipeline);
      if (p.dedup() == null) {
        throw new IdemConfigException(
            "pipeline " + p.id() + " has no dedup step, so it keeps no keys");
      }
      if (ServiceAssembly.keepsKeysInSource(p)) {
        throw new IdemConfigException(
            "pipeline "
                + p.id()
                + " keeps its keys in source.kafka.state, held by the running instances (each"
                + " for the partitions it owns): use the admin API of the instance that owns the"
                + " key's partition (GET or DELETE /admin/pipelines/"
                + p.id()
                + "/keys/KEY)");
      }
      DedupKey k;
      try {
        EventKeys keys = tenantKeys(p, tenant);
        k = AdminApi.keyOf(keys, key, digest);
      } catch (KeyDerivationException e) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("idem: " + e.getMessage());
        err.flush();
        return 1;
      }
      StoreSettings storeSettings = c.storeOf(p);
      try (DedupStore store = ServiceAssembly.openStore(storeSettings)) {
        Deduplicator d =
            Deduplicator.builder(ServiceAssembly.dedupStore(p, store), Scope.of(p.id()))
                .config(p.dedup().config())
                .build();
        PrintWriter out = spec.commandLine().getOut();
        out.println(JSON.valueToTree(act(d, k)).toPrettyString());
        out.flush();
        return 0;
      } catch (StoreUnavailableException e) {
        throw new IdemException(
            "store " + storeSettings.describe() + " is unavailable: " + e.getMessage());
      }
    }

    abstract Object act(Deduplicator d, DedupKey k);
  }

  /** {@code idem inspect --config FILE --pipeline ID KEY}. */
  @Command(
      name = "inspect",
      mixinStandardHelpOptions = true,
      description =
          "Prints a key's state in the configured store (absent, in_flight, committed). For a"
              + " RocksDB store, stop the service first (or use GET /admin/pipelines/{id}/keys/{key}).")
  static final class Inspect extends KeyAdmin {
    @Override
    Object act(Deduplicator d, DedupKey k) {
      return AdminApi.describe(pipeline, key, k, d.inspect(k));
    }
  }

  /** {@code idem forget --config FILE --pipeline ID KEY}. */
  @Command(
      name = "forget",
      mixinStandardHelpOptions = true,
      description =
          "Forgets a key in the configured store: the next event with it is new. For a RocksDB"
              + " store, stop the service first (or use DELETE /admin/pipelines/{id}/keys/{key}).")
  static final class Forget extends KeyAdmin {
    @Override
    Object act(Deduplicator d, DedupKey k) {
      Map<String, Object> out = new java.util.LinkedHashMap<>();
      out.put("pipeline", pipeline);
      out.put("key", key);
      out.put("digest", k.toHex());
      out.put("forgotten", d.forget(k));
      return out;
    }
  }
}
