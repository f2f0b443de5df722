package dev.idem.server.http;

import dev.idem.server.admin.ConsoleAssets;
import dev.idem.server.auth.MtlsCallers;
import dev.idem.server.config.HttpLimits;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.source.webhook.WebhookSource;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.PreEncodedHttpField;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes every request: a pipeline's webhook path (POST only), {@code /health}, {@code /metrics},
 * {@code /admin/ui/...} (the console's static files, see {@link ConsoleAssets}), {@code
 * /admin/...}; anything else is {@code 404}. With a management listener ({@code
 * server.management_port}), {@code /metrics} is served only there, {@code /health} on both, and the
 * management listener serves nothing else.
 *
 * <p>A webhook request is checked before its body is read: {@code 413} for a {@code Content-Length}
 * over the pipeline's limit, {@code 415} for a {@code multipart/*} body, a charset other than UTF-8
 * or a {@code Content-Encoding} other than {@code identity}, {@code 501} for a {@code
 * Transfer-Encoding} other than {@code chunked}. Any other content type is read as JSON ({@code
 * curl -d} sends form-encoded). The body is then read by a {@link BodyReader}, which holds no
 * thread while the client is slow and bounds the upload by {@code server.read_timeout} and {@code
 * server.min_data_rate} ({@code 408}); a streamed body is refused as soon as it passes the limit,
 * so an oversized body is never buffered whole, and the buffer grows with the bytes that arrive,
 * never from the declared length. The pipeline then runs on a pool thread (blocking is allowed: a
 * virtual thread on Java 21+, the bounded pool on 17).
 */
public final class IdemHandler extends Handler.Abstract {
  /** The name of the management connector, whose requests see only the management paths. */
  public static final String MANAGEMENT_CONNECTOR = "idem-management";

  private static final Logger LOG = LoggerFactory.getLogger(IdemHandler.class);
  private static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";
  private static final HttpField JSON_TYPE =
      new PreEncodedHttpField(HttpHeader.CONTENT_TYPE, Answer.JSON);

  private final Map<String, WebhookSource> byPath;
  private final Map<String, IdemMetrics.PipelineMeters> meters;
  private final @Nullable AdminApi admin;
  private final HealthCheck health;
  private final @Nullable PrometheusMeterRegistry prometheus;
  private final HttpLimits limits;
  private final boolean managementListener;
  private final ConsoleAssets console = new ConsoleAssets();

  /** The largest admin request body (an event to explain). */
  static final int MAX_ADMIN_BODY = 4 << 20;

  /**
   * Creates the handler.
   *
   * @param pipelines the pipelines
   * @param metrics the meters
   * @param admin the admin API, or null when no admin token is configured ({@code /admin} is then
   *     {@code 404})
   * @param health the health check
   * @param prometheus the registry {@code /metrics} scrapes, or null for no {@code /metrics}
   * @param limits the bounds on reading a body
   * @param managementListener whether a connector named {@link #MANAGEMENT_CONNECTOR} serves {@code
   *     /metrics} (then it is not served on the others)
   */
  public IdemHandler(
      List<WebhookSource> pipelines,
      IdemMetrics metrics,
      @Nullable AdminApi admin,
      HealthCheck health,
      @Nullable PrometheusMeterRegistry prometheus,
      HttpLimits limits,
      boolean managementListener) {
    super(InvocationType.BLOCKING);
    Map<String, WebhookSource> paths = new HashMap<>();
    Map<String, IdemMetrics.PipelineMeters> m = new HashMap<>();
    for (WebhookSource w : pipelines) {
      paths.put(Objects.requireNonNull(w.pipeline().settings().webhook()).path(), w);
      m.put(w.pipeline().id(), metrics.pipeline(w.pipeline().id()));
    }
    this.byPath = Map.copyOf(paths);
    this.meters = Map.copyOf(m);
    this.admin = admin;
    this.health = health;
    this.prometheus = prometheus;
    this.limits = limits;
    this.managementListener = managementListener;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    Answer answer;
    try {
      if (onManagementConnector(request)) {
        answer = management(request);
      } else {
        String path = request.getHttpURI().getPath();
        WebhookSource p = path == null ? null : byPath.get(path);
        if (p != null) {
          webhook(p, request, response, callback);
          return true;
        }
        answer = route(request, path == null ? "/" : path);
      }
    } catch (RuntimeException e) {
      LOG.warn("request {} {} failed", request.getMethod(), request.getHttpURI().getPath(), e);
      answer = Answer.error(500, "internal_error", "the request failed; retry later");
    }
    write(response, answer, callback);
    return true;
  }

  private boolean onManagementConnector(Request request) {
    return managementListener
        && MANAGEMENT_CONNECTOR.equals(request.getConnectionMetaData().getConnector().getName());
  }

  private Answer management(Request request) {
    String path = request.getHttpURI().getPath();
    String method = request.getMethod();
    if ("/health".equals(path)) {
      return method.equals("GET") || method.equals("HEAD") ? health.check() : notAllowed("GET");
    }
    if ("/metrics".equals(path) && prometheus != null) {
      return metrics(method);
    }
    return Answer.error(
        404,
        "not_found",
        "the management port serves only /metrics and /health; webhooks and /admin are on"
            + " server.port");
  }

  private Answer metrics(String method) {
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return notAllowed("GET");
    }
    PrometheusMeterRegistry registry = Objects.requireNonNull(prometheus);
    return new Answer(
        200, PROMETHEUS_TYPE, Map.of(), registry.scrape().getBytes(StandardCharsets.UTF_8));
  }

  private Answer route(Request request, String path) {
    String method = request.getMethod();
    if (path.equals("/health")) {
      return method.equals("GET") || method.equals("HEAD") ? health.check() : notAllowed("GET");
    }
    if (path.equals("/metrics") && prometheus != null) {
      if (managementListener) {
        return Answer.error(
            404,
            "not_found",
            "/metrics is served on the management port (server.management_port), not here");
      }
      return metrics(method);
    }
    if (path.equals("/admin/ui") || path.startsWith(ConsoleAssets.PREFIX)) {
      return admin == null ? adminDisabled() : console.serve(method, path);
    }
    if (path.equals("/admin") || path.startsWith("/admin/")) {
      return admin(request, method, path);
    }
    return Answer.error(
        404,
        "not_found",
        "no pipeline listens on " + path + "; check the webhook path in the config");
  }

  private static Answer notAllowed(String allow) {
    return Answer.error(
        405, "method_not_allowed", "use " + allow + " on this path", Map.of("Allow", allow));
  }

  private void webhook(WebhookSource p, Request request, Response response, Callback callback) {
    IdemMetrics.PipelineMeters m = meters.get(p.pipeline().id());
    long maxBody = Objects.requireNonNull(p.pipeline().settings().webhook()).maxBody();
    Answer early = beforeBody(maxBody, request);
    if (early != null) {
      m.answered(early.status());
      write(response, early, callback);
      return;
    }
    Function<String, @Nullable String> headers = callerHeaders(request);
    BodyReader reader =
        new BodyReader(
            request,
            maxBody,
            limits,
            request.getComponents().getScheduler(),
            System::nanoTime,
            new BodyReader.Outcome() {
              @Override
              public void body(byte[] body) {
                CompletionStage<Answer> answer;
                try {
                  // Answered when the outcome is settled: a commit's sync (RocksDB group commit)
                  // completes it on the thread that synced, so this thread does not wait for it.
                  answer = p.handleAsync(new InboundRequest(body, headers));
                } catch (RuntimeException e) {
                  answer = CompletableFuture.failedFuture(e);
                }
                answer.whenComplete(
                    (a, error) -> {
                      if (error != null) {
                        LOG.warn("request POST {} failed", request.getHttpURI().getPath(), error);
                        a = Answer.error(500, "internal_error", "the request failed; retry later");
                      }
                      m.answered(a.status());
                      try {
                        write(response, a, callback);
                      } catch (RuntimeException e) {
                        // Off Jetty's own call stack (the store's syncing thread may run this),
                        // nobody else would fail the callback: the request would hang instead.
                        LOG.warn(
                            "request POST {}: answer not written",
                            request.getHttpURI().getPath(),
                            e);
                        callback.failed(e);
                      }
                    });
              }

              @Override
              public void refused(Answer answer) {
                m.answered(answer.status());
                write(response, answer, callback);
              }
            });
    reader.start();
  }

  /**
   * The request's headers, and the TLS client certificate the handshake verified as the
   * pseudo-headers {@link MtlsCallers} reads. A name starting with {@code :} is never looked up in
   * the request's own headers, so no client can set those.
   */
  static Function<String, @Nullable String> callerHeaders(Request request) {
    HttpFields headers = request.getHeaders();
    X509Certificate[] chain =
        request.getAttribute(EndPoint.SslSessionData.ATTRIBUTE) instanceof EndPoint.SslSessionData d
            ? d.peerCertificates()
            : null;
    Function<String, @Nullable String> tls = MtlsCallers.pseudoHeaders(chain);
    return name -> name.startsWith(":") ? tls.apply(name) : headers.get(name);
  }

  /** The checks a webhook request gets from its headers alone; null if it may send its body. */
  private static @Nullable Answer beforeBody(long max, Request request) {
    if (!request.getMethod().equals("POST")) {
      return notAllowed("POST");
    }
    HttpFields headers = request.getHeaders();
    Answer refused = ContentRules.check(headers);
    if (refused != null) {
      return refused;
    }
    long declared = request.getLength();
    if (declared > max) {
      return tooLarge(max, declared);
    }
    return null;
  }

  static Answer tooLarge(long max, long declared) {
    return Answer.error(
        413,
        "body_too_large",
        "the body is larger than this pipeline's max_body of "
            + max
            + " bytes"
            + (declared > 0 ? " (Content-Length " + declared + ")" : "")
            + "; send a smaller event or raise source.webhook.max_body",
        Map.of("Connection", "close"));
  }

  private Answer admin(Request request, String method, String path) {
    if (admin == null) {
      return adminDisabled();
    }
    if (!admin.authorized(request.getHeaders().get(HttpHeader.AUTHORIZATION))) {
      return Answer.error(
          401,
          "unauthorized",
          "send the admin token: Authorization: Bearer <server.admin_token>",
          Map.of("WWW-Authenticate", "Bearer realm=\"idem-admin\""));
    }
    List<String> segments = new ArrayList<>();
    Map<String, String> query = new LinkedHashMap<>();
    try {
      for (String s : path.substring("/admin".length()).split("/", -1)) {
        if (!s.isEmpty()) {
          segments.add(URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8));
        }
      }
      String q = request.getHttpURI().getQuery();
      if (q != null) {
        for (String pair : q.split("&")) {
          int eq = pair.indexOf('=');
          if (eq > 0) {
            query.put(
                URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
          }
        }
      }
    } catch (IllegalArgumentException e) {
      // URLDecoder's answer to '%' not followed by two hex digits, e.g. %ZZ.
      return Answer.error(
          400,
          "bad_request",
          "the admin URL has a malformed percent-encoding ("
              + e.getMessage()
              + "); encode each byte of the key as %XX, and '%' itself as %25");
    }
    byte[] body = new byte[0];
    if (method.equals("POST")) {
      try {
        body = Content.Source.asInputStream(request).readNBytes(MAX_ADMIN_BODY + 1);
      } catch (java.io.IOException e) {
        return Answer.error(400, "bad_request", "the admin request body could not be read");
      }
      if (body.length > MAX_ADMIN_BODY) {
        return Answer.error(
            413,
            "body_too_large",
            "admin request bodies are limited to " + MAX_ADMIN_BODY + " bytes",
            Map.of("Connection", "close"));
      }
    }
    return admin.handle(method, segments, query, body);
  }

  private static Answer adminDisabled() {
    return Answer.error(
        404,
        "admin_disabled",
        "the admin API is off; set server.admin_token in the config to turn it on");
  }

  private static void write(Response response, Answer a, Callback callback) {
    response.setStatus(a.status());
    HttpFields.Mutable h = response.getHeaders();
    // With no field set yet (the usual case) add, which neither searches the fields nor makes an
    // iterator; the JSON type, which nearly every answer has, is one field encoded once.
    HttpField type =
        Answer.JSON.equals(a.contentType())
            ? JSON_TYPE
            : new HttpField(HttpHeader.CONTENT_TYPE, a.contentType());
    if (h.size() == 0) {
      h.add(type);
    } else {
      h.put(type);
    }
    Map<String, String> extra = a.headers();
    if (!extra.isEmpty()) {
      for (Map.Entry<String, String> e : extra.entrySet()) {
        h.put(new HttpField(e.getKey(), e.getValue()));
      }
    }
    response.write(true, ByteBuffer.wrap(a.body()), callback);
  }
}
