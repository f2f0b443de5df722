package dev.idem.server;

import dev.idem.TimeSource;
import dev.idem.server.admin.Explainer;
import dev.idem.server.auth.MtlsSettings;
import dev.idem.server.config.HttpLimits;
import dev.idem.server.config.ServerSettings;
import dev.idem.server.config.TlsSettings;
import dev.idem.server.http.AdminApi;
import dev.idem.server.http.HeaderDeadline;
import dev.idem.server.http.HealthCheck;
import dev.idem.server.http.IdemHandler;
import dev.idem.server.http.JsonErrorHandler;
import dev.idem.server.logging.AccessLog;
import dev.idem.server.metrics.DecisionSampler;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.tls.ServerTls;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.RequestLog;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running service: a Jetty 12 server (core handlers, no servlets) in front of a {@link
 * ServiceRuntime}. On Java 21+ requests run on virtual threads (detected at run time: Idem is
 * compiled for Java 17); on 17-20 on a bounded pool of {@code server.max_threads} platform threads.
 * No thread waits for a slow client: headers are parsed and bodies read as bytes arrive, bounded by
 * {@code server.read_timeout}, {@code server.min_data_rate}, {@code server.idle_timeout} and {@code
 * server.max_header_size} ({@link HeaderDeadline}, the handler's body reader). Jetty's own refusals
 * answer in the JSON error form ({@link JsonErrorHandler}). With {@code server.management_port}, a
 * second connector serves {@code /metrics} and {@code /health}.
 *
 * <p>{@link #close()} shuts down gracefully: the listener stops accepting, requests in flight get
 * up to {@code server.shutdown_timeout} to finish, then background deliveries stop and sinks and
 * stores are closed.
 */
public final class IdemServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(IdemServer.class);

  private final Server jetty;
  private final ServerConnector connector;
  private final @Nullable ServerConnector management;
  private final GracefulHandler graceful;
  private final HeaderDeadline headers;
  private final ServiceRuntime runtime;
  private final ServerSettings settings;
  private final boolean virtualThreads;
  private final @Nullable AdminApi admin;
  private final @Nullable ServerTls tls;

  private IdemServer(ServerSettings settings, ServiceRuntime runtime) {
    this.settings = settings;
    this.runtime = runtime;
    QueuedThreadPool pool = new QueuedThreadPool(settings.maxThreads(), 8);
    pool.setName("idem-http");
    this.virtualThreads = VirtualThreads.areSupported();
    if (virtualThreads) {
      pool.setVirtualThreadsExecutor(VirtualThreads.getNamedVirtualThreadsExecutor("idem-request"));
    }
    this.jetty = new Server(pool);
    HttpLimits limits = settings.limits();
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    // The request line and headers together; a longer URL is 414, more headers 431.
    http.setRequestHeaderSize(limits.maxHeaderSize());
    http.setIdleTimeout(limits.idleTimeout().toMillis());
    // Admin URLs carry raw key values, URL-encoded, which may contain '/', '%' or '.'.
    http.setUriCompliance(
        UriCompliance.DEFAULT.with(
            "idem",
            UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR,
            UriCompliance.Violation.AMBIGUOUS_PATH_ENCODING,
            UriCompliance.Violation.AMBIGUOUS_PATH_SEGMENT,
            UriCompliance.Violation.AMBIGUOUS_EMPTY_SEGMENT,
            UriCompliance.Violation.SUSPICIOUS_PATH_CHARACTERS));
    this.tls = tls(settings, runtime);
    if (tls == null) {
      this.connector = new ServerConnector(jetty, new HttpConnectionFactory(http));
    } else {
      HttpConfiguration https = new HttpConfiguration(http);
      // Exposes the verified client certificate to the handler; no SNI checks (one certificate).
      https.addCustomizer(new SecureRequestCustomizer(false));
      this.connector =
          new ServerConnector(
              jetty,
              new SslConnectionFactory(tls.factory(), HttpVersion.HTTP_1_1.asString()),
              new HttpConnectionFactory(https));
    }
    connector.setHost(settings.host());
    connector.setPort(settings.port());
    configure(connector, settings);
    jetty.addConnector(connector);
    if (settings.managementPort() != null) {
      this.management = new ServerConnector(jetty, 1, 1, new HttpConnectionFactory(http));
      management.setName(IdemHandler.MANAGEMENT_CONNECTOR);
      management.setHost(settings.host());
      management.setPort(settings.managementPort());
      configure(management, settings);
      jetty.addConnector(management);
    } else {
      this.management = null;
    }

    Map<String, Pipeline> byId = new LinkedHashMap<>();
    runtime.pipelines().forEach(p -> byId.put(p.id(), p));
    this.admin =
        settings.adminToken() == null
            ? null
            : new AdminApi(
                settings.adminToken(),
                byId,
                runtime.metrics(),
                runtime.outboxDecoder(),
                p -> Explainer.of(p, new DefaultEdge(), TimeSource.system()),
                new DecisionSampler(
                    runtime.metrics(),
                    List.copyOf(byId.keySet()),
                    TimeSource.system(),
                    DecisionSampler.DEFAULT_INTERVAL,
                    DecisionSampler.DEFAULT_SAMPLES),
                TimeSource.system());
    IdemHandler handler =
        new IdemHandler(
            runtime.webhooks(),
            runtime.metrics(),
            this.admin,
            new HealthCheck(runtime.stores()),
            runtime.prometheus(),
            limits,
            management != null);
    this.headers = new HeaderDeadline(handler, limits.readTimeout(), System::nanoTime);
    connector.addEventListener(headers);
    if (management != null) {
      management.addEventListener(headers);
    }
    this.graceful = new GracefulHandler(headers);
    jetty.setHandler(graceful);
    jetty.setErrorHandler(new JsonErrorHandler());
    RequestLog accessLog = AccessLog.fromEnvironment(System::getenv);
    if (accessLog != null) {
      jetty.setRequestLog(accessLog);
    }
    jetty.setStopTimeout(settings.shutdownTimeout().toMillis());
    jetty.setStopAtShutdown(false);
  }

  /** The listener's TLS, with the sources' {@code auth.mtls.ca} files trusted too; or null. */
  private static @Nullable ServerTls tls(ServerSettings settings, ServiceRuntime runtime) {
    TlsSettings t = settings.tls();
    if (t == null) {
      return null;
    }
    List<Path> cas = new ArrayList<>();
    for (Pipeline p : runtime.pipelines()) {
      MtlsSettings m = p.settings().webhook() == null ? null : p.settings().webhook().mtls();
      if (m != null && m.ca() != null) {
        cas.add(m.ca());
      }
    }
    return ServerTls.create(t, cas);
  }

  private static void configure(ServerConnector c, ServerSettings settings) {
    // Silence on a connection (between bytes of a request, or between requests) ends it.
    c.setIdleTimeout(settings.limits().idleTimeout().toMillis());
    // On shutdown, idle keep-alive connections close after this; busy ones finish first.
    c.setShutdownIdleTimeout(Math.min(250, Math.max(1, settings.shutdownTimeout().toMillis())));
  }

  /**
   * Starts serving a runtime. On failure the runtime is closed.
   *
   * @param settings the listener settings
   * @param runtime what to serve; owned by the server from now on
   * @return the running server
   * @throws IllegalStateException if the port cannot be bound
   */
  public static IdemServer start(ServerSettings settings, ServiceRuntime runtime) {
    IdemServer server;
    try {
      server = new IdemServer(settings, runtime);
    } catch (RuntimeException e) {
      runtime.close(); // e.g. a TLS file that no longer loads
      throw e;
    }
    try {
      server.jetty.start();
      server.headers.start(server.jetty.getScheduler());
    } catch (Exception e) {
      try {
        server.jetty.stop();
      } catch (Exception ignored) {
        // Starting failed; stopping what started is best effort.
      }
      if (server.tls != null) {
        server.tls.close();
      }
      runtime.close();
      throw new IllegalStateException(
          "cannot listen on "
              + settings.host()
              + ":"
              + settings.port()
              + (settings.managementPort() == null
                  ? ""
                  : " and management port " + settings.managementPort())
              + " ("
              + e.getMessage()
              + "); pick another server.port"
              + (settings.managementPort() == null ? "" : " or server.management_port")
              + " or stop what uses it",
          e);
    }
    LOG.info(
        "idem listening on {}://{}:{}{} ({} {}; request threads: {}; admin API {})",
        server.tls == null ? "http" : "https",
        settings.host(),
        server.port(),
        server.management == null ? "" : ", /metrics on port " + server.managementPort(),
        runtime.pipelines().size(),
        runtime.pipelines().size() == 1 ? "pipeline" : "pipelines",
        server.virtualThreads ? "virtual" : "platform, at most " + settings.maxThreads(),
        settings.adminToken() == null ? "off" : "on");
    try {
      runtime.startSources();
    } catch (RuntimeException e) {
      server.close();
      throw e;
    }
    return server;
  }

  /**
   * Returns the port listened on (the one picked, if the config said 0).
   *
   * @return the local port
   */
  public int port() {
    return connector.getLocalPort();
  }

  /**
   * Returns the management port (the one picked, if the config said 0), or -1 without a management
   * listener.
   *
   * @return the local management port, or -1
   */
  public int managementPort() {
    return management == null ? -1 : management.getLocalPort();
  }

  /**
   * Returns the base URI of the management listener for loopback clients.
   *
   * @return e.g. {@code http://127.0.0.1:9090}
   * @throws IllegalStateException without a management listener
   */
  public URI managementUri() {
    if (management == null) {
      throw new IllegalStateException("no management listener; set server.management_port");
    }
    return URI.create("http://" + loopbackHost() + ":" + management.getLocalPort());
  }

  private String loopbackHost() {
    String host =
        settings.host().equals("0.0.0.0") || settings.host().equals("::")
            ? "127.0.0.1"
            : settings.host();
    return host.contains(":") ? "[" + host + "]" : host;
  }

  /**
   * Returns the base URI for loopback clients.
   *
   * @return e.g. {@code http://127.0.0.1:8080}
   */
  public URI uri() {
    return URI.create((tls == null ? "http://" : "https://") + loopbackHost() + ":" + port());
  }

  /**
   * Returns how many requests are being handled now: their headers are in and their answer is not
   * yet written (a slow upload counts, though it holds no thread).
   *
   * @return the requests in flight
   */
  public long requestsInFlight() {
    return graceful.getCurrentRequestCount();
  }

  /**
   * Returns whether requests run on virtual threads.
   *
   * @return true on Java 21+
   */
  public boolean virtualThreads() {
    return virtualThreads;
  }

  /**
   * Returns what the server serves.
   *
   * @return the runtime
   */
  public ServiceRuntime runtime() {
    return runtime;
  }

  /**
   * Stops gracefully: no new requests, requests in flight finish (up to the shutdown timeout), then
   * the runtime is closed. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (jetty.isStopped()) {
      return;
    }
    // With a stop timeout, Jetty's stop is graceful: connectors stop accepting first, then the
    // GracefulHandler waits (up to the timeout) for requests in flight.
    try {
      jetty.stop();
    } catch (Exception e) {
      LOG.warn("stopping the HTTP listener failed: {}", e.toString());
    }
    if (admin != null) {
      admin.close();
    }
    if (tls != null) {
      tls.close();
    }
    runtime.close();
    LOG.info("idem stopped");
  }
}
