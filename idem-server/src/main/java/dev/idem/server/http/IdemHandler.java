package dev.idem.server.http;

import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Blocker;
import org.eclipse.jetty.util.Callback;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes every request: a pipeline's webhook path (POST only), {@code /health}, {@code /metrics},
 * {@code /admin/...}; anything else is {@code 404}. Blocking (runs on a virtual thread on Java 21+,
 * on a bounded pool on 17). Each webhook body is read up to the pipeline's limit and no further: a
 * {@code Content-Length} above it is refused at once, and a streamed body is refused as soon as it
 * passes the limit, so an oversized body is never buffered whole.
 */
public final class IdemHandler extends Handler.Abstract {
  private static final Logger LOG = LoggerFactory.getLogger(IdemHandler.class);
  private static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final Map<String, Pipeline> byPath;
  private final Map<String, IdemMetrics.PipelineMeters> meters;
  private final @Nullable AdminApi admin;
  private final HealthCheck health;
  private final @Nullable PrometheusMeterRegistry prometheus;

  /**
   * Creates the handler.
   *
   * @param pipelines the pipelines
   * @param metrics the meters
   * @param admin the admin API, or null when no admin token is configured ({@code /admin} is then
   *     {@code 404})
   * @param health the health check
   * @param prometheus the registry {@code /metrics} scrapes, or null for no {@code /metrics}
   */
  public IdemHandler(
      List<Pipeline> pipelines,
      IdemMetrics metrics,
      @Nullable AdminApi admin,
      HealthCheck health,
      @Nullable PrometheusMeterRegistry prometheus) {
    super(InvocationType.BLOCKING);
    Map<String, Pipeline> paths = new HashMap<>();
    Map<String, IdemMetrics.PipelineMeters> m = new HashMap<>();
    for (Pipeline p : pipelines) {
      paths.put(p.settings().webhook().path(), p);
      m.put(p.id(), metrics.pipeline(p.id()));
    }
    this.byPath = Map.copyOf(paths);
    this.meters = Map.copyOf(m);
    this.admin = admin;
    this.health = health;
    this.prometheus = prometheus;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    Answer answer;
    try {
      answer = route(request);
    } catch (RuntimeException e) {
      LOG.warn("request {} {} failed", request.getMethod(), request.getHttpURI().getPath(), e);
      answer = Answer.error(500, "internal_error", "the request failed; retry later");
    }
    write(response, answer, callback);
    return true;
  }

  private Answer route(Request request) {
    String path = request.getHttpURI().getPath();
    if (path == null) {
      path = "/";
    }
    String method = request.getMethod();
    Pipeline p = byPath.get(path);
    if (p != null) {
      IdemMetrics.PipelineMeters m = meters.get(p.id());
      Answer a = webhook(p, method, request);
      m.answered(a.status());
      return a;
    }
    if (path.equals("/health")) {
      return method.equals("GET") || method.equals("HEAD") ? health.check() : notAllowed("GET");
    }
    if (path.equals("/metrics") && prometheus != null) {
      if (!method.equals("GET") && !method.equals("HEAD")) {
        return notAllowed("GET");
      }
      return new Answer(
          200, PROMETHEUS_TYPE, Map.of(), prometheus.scrape().getBytes(StandardCharsets.UTF_8));
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

  private Answer webhook(Pipeline p, String method, Request request) {
    if (!method.equals("POST")) {
      return notAllowed("POST");
    }
    long max = p.settings().webhook().maxBody();
    long declared = request.getLength();
    if (declared > max) {
      return tooLarge(max, declared);
    }
    byte[] body;
    try {
      body = readAtMost(request, declared, max);
    } catch (IOException e) {
      return Answer.error(400, "bad_request", "the body could not be read: " + e.getMessage());
    }
    if (body == null) {
      return tooLarge(max, -1);
    }
    HttpFields headers = request.getHeaders();
    return p.handle(new InboundRequest(body, headers::get));
  }

  private static Answer tooLarge(long max, long declared) {
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

  /**
   * Reads the body chunk by chunk, blocking for more, and returns null as soon as it exceeds {@code
   * max} bytes (the rest is never read). With a declared length, the array is allocated once at
   * that size.
   */
  private static byte @Nullable [] readAtMost(Request request, long declared, long max)
      throws IOException {
    byte[] buf = new byte[(int) (declared >= 0 ? declared : Math.min(max + 1, 16 * 1024))];
    int n = 0;
    while (true) {
      Content.Chunk chunk = request.read();
      if (chunk == null) {
        try (Blocker.Runnable more = Blocker.runnable()) {
          request.demand(more);
          more.block();
        }
        continue;
      }
      try {
        if (Content.Chunk.isFailure(chunk)) {
          Throwable failure = chunk.getFailure();
          throw failure instanceof IOException io ? io : new IOException(failure);
        }
        ByteBuffer bytes = chunk.getByteBuffer();
        int length = bytes.remaining();
        if (n + (long) length > max) {
          return null;
        }
        if (n + length > buf.length) {
          buf =
              Arrays.copyOf(
                  buf, (int) Math.min(max + 1, Math.max((long) n + length, 2L * buf.length)));
        }
        bytes.get(buf, n, length);
        n += length;
        if (chunk.isLast()) {
          break;
        }
      } finally {
        chunk.release();
      }
    }
    if (declared >= 0 && n != declared) {
      throw new IOException("the body ended after " + n + " of " + declared + " bytes");
    }
    return n == buf.length ? buf : Arrays.copyOf(buf, n);
  }

  private Answer admin(Request request, String method, String path) {
    if (admin == null) {
      return Answer.error(
          404,
          "admin_disabled",
          "the admin API is off; set server.admin_token in the config to turn it on");
    }
    if (!admin.authorized(request.getHeaders().get(HttpHeader.AUTHORIZATION))) {
      return Answer.error(
          401,
          "unauthorized",
          "send the admin token: Authorization: Bearer <server.admin_token>",
          Map.of("WWW-Authenticate", "Bearer realm=\"idem-admin\""));
    }
    List<String> segments = new ArrayList<>();
    for (String s : path.substring("/admin".length()).split("/", -1)) {
      if (!s.isEmpty()) {
        segments.add(URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8));
      }
    }
    Map<String, String> query = new LinkedHashMap<>();
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
    return admin.handle(method, segments, query);
  }

  private static void write(Response response, Answer a, Callback callback) {
    response.setStatus(a.status());
    HttpFields.Mutable h = response.getHeaders();
    h.put(HttpHeader.CONTENT_TYPE, a.contentType());
    for (Map.Entry<String, String> e : a.headers().entrySet()) {
      h.put(new HttpField(e.getKey(), e.getValue()));
    }
    response.write(true, ByteBuffer.wrap(a.body()), callback);
  }
}
