package dev.idem.server.admin;

import dev.idem.server.pipeline.Answer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The web console's static files under {@code /admin/ui/}, bundled in the jar (no CDN: the console
 * works offline). The files hold no secret, so they are served without the admin token; the page
 * asks for the token in a login form, keeps it in the browser's {@code sessionStorage} and sends it
 * as a bearer token on each admin API call, never in a URL. Every answer forbids framing and
 * scripts from anywhere but this origin.
 */
public final class ConsoleAssets {
  /** The prefix the console is served under. */
  public static final String PREFIX = "/admin/ui/";

  private static final String BASE = "/dev/idem/server/admin/ui/";

  private static final Map<String, String> TYPES =
      Map.of(
          "index.html", "text/html; charset=utf-8",
          "console.js", "text/javascript; charset=utf-8",
          "console.css", "text/css; charset=utf-8");

  private static final Map<String, String> HEADERS =
      Map.of(
          "Cache-Control",
          "no-cache",
          "X-Content-Type-Options",
          "nosniff",
          "X-Frame-Options",
          "DENY",
          "Referrer-Policy",
          "no-referrer",
          "Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
              + " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");

  private final Map<String, byte[]> cache = new ConcurrentHashMap<>();

  /** Creates the file server; files are read from the class path when first asked for. */
  public ConsoleAssets() {}

  /**
   * Answers a request for a console path.
   *
   * @param method the HTTP method
   * @param path the request path, {@code /admin/ui} or below
   * @return the file, a redirect from {@code /admin/ui} to {@code /admin/ui/}, 405 or 404
   */
  public Answer serve(String method, String path) {
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return Answer.error(405, "method_not_allowed", "use GET", Map.of("Allow", "GET"));
    }
    if (path.equals("/admin/ui")) {
      return new Answer(302, Answer.JSON, Map.of("Location", PREFIX), "{}".getBytes());
    }
    String name = path.substring(PREFIX.length());
    if (name.isEmpty()) {
      name = "index.html";
    }
    String type = TYPES.get(name);
    byte[] body = type == null ? null : read(name);
    if (body == null) {
      return Answer.error(404, "not_found", "the console has no file " + path);
    }
    return new Answer(200, type, HEADERS, body);
  }

  private byte @Nullable [] read(String name) {
    return cache.computeIfAbsent(
        name,
        n -> {
          try (InputStream in = ConsoleAssets.class.getResourceAsStream(BASE + n)) {
            if (in == null) {
              throw new IllegalStateException("console file " + n + " is missing from the jar");
            }
            return in.readAllBytes();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
  }
}
