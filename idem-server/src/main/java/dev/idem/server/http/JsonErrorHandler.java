package dev.idem.server.http;

import dev.idem.server.pipeline.Answer;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.jspecify.annotations.Nullable;

/**
 * Jetty's answer to what it refuses before Idem's handler runs (a malformed request line, a bad or
 * duplicate {@code Content-Length}, a URL or headers over {@code server.max_header_size}, an HTTP
 * version it does not speak, an ambiguous path escape), in the service's error form {@code
 * {"error":"<code>","message":"<what to do>"}} instead of Jetty's HTML page.
 */
public final class JsonErrorHandler extends ErrorHandler {
  /** Creates the handler. */
  public JsonErrorHandler() {
    setShowStacks(false);
    setShowCauses(false);
  }

  /** Every method gets the JSON body (Jetty's default writes none for, e.g., {@code PRI}). */
  @Override
  public boolean errorPageForMethod(String method) {
    return true;
  }

  @Override
  protected void generateResponse(
      Request request,
      Response response,
      int status,
      @Nullable String message,
      @Nullable Throwable cause,
      Callback callback) {
    Answer a = answer(status, message);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, a.contentType());
    response.write(true, ByteBuffer.wrap(a.body()), callback);
  }

  /**
   * Returns the answer for a status Jetty chose.
   *
   * @param status the HTTP status
   * @param reason Jetty's reason, or null
   * @return the error answer
   */
  static Answer answer(int status, @Nullable String reason) {
    String why = reason == null || reason.isBlank() ? "" : " (" + reason + ")";
    return switch (status) {
      case 400 ->
          Answer.error(
              400,
              "bad_request",
              "the request is not valid HTTP/1.1"
                  + why
                  + "; send one Content-Length or chunked framing, and percent-encode the path"
                  + " (%XX, '%' as %25)");
      case 408 ->
          Answer.error(
              408,
              "request_timeout",
              "the request did not arrive in time"
                  + why
                  + "; send the headers and the body at once (server.read_timeout,"
                  + " server.idle_timeout)");
      case 413 ->
          Answer.error(
              413, "body_too_large", "the request is too large" + why + "; send a smaller one");
      case 414 ->
          Answer.error(
              414,
              "uri_too_long",
              "the URL is longer than server.max_header_size allows" + why + "; use a shorter one");
      case 431 ->
          Answer.error(
              431,
              "headers_too_large",
              "the request headers are larger than server.max_header_size"
                  + why
                  + "; send fewer or smaller headers");
      case 426, 505 ->
          Answer.error(
              status,
              status == 426 ? "upgrade_required" : "http_version_not_supported",
              "this HTTP version is not served" + why + "; use HTTP/1.1 (or HTTP/1.0)");
      case 501 ->
          Answer.error(
              501, "not_implemented", "the request uses what is not implemented here" + why);
      default ->
          status >= 500
              ? Answer.error(status, "internal_error", "the request failed" + why + "; retry later")
              : Answer.error(status, "bad_request", "the request was refused" + why);
    };
  }
}
