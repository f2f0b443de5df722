package dev.idem.server.http;

import dev.idem.server.pipeline.Answer;
import java.util.Locale;
import java.util.Map;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.jspecify.annotations.Nullable;

/**
 * What a webhook accepts, judged from the headers before any body byte is read. One rule: the body
 * is read as UTF-8 JSON whatever {@code Content-Type} says ({@code curl -d} sends {@code
 * application/x-www-form-urlencoded}, and GitHub's form-encoded deliveries are decoded by the
 * signature step of GitHub-signed pipelines), except:
 *
 * <ul>
 *   <li>{@code multipart/*}: {@code 415 unsupported_media_type} (the parts would be read as JSON);
 *   <li>a {@code charset} parameter other than {@code utf-8} (or {@code us-ascii}, a subset):
 *       {@code 415 unsupported_media_type};
 *   <li>a {@code Content-Encoding} other than {@code identity} (e.g. {@code gzip}): {@code 415
 *       unsupported_encoding} (a compressed body is not decoded, so it is never read as JSON);
 *   <li>a {@code Transfer-Encoding} other than {@code chunked} (e.g. {@code gzip, chunked}): {@code
 *       501 not_implemented}, as RFC 9112 section 6.1 asks of a server that does not understand a
 *       transfer coding.
 * </ul>
 */
final class ContentRules {
  private ContentRules() {}

  /**
   * Checks a request's headers.
   *
   * @param headers the request headers
   * @return null if the body may be read, else the answer
   */
  static @Nullable Answer check(HttpFields headers) {
    for (int i = 0, n = headers.size(); i < n; i++) { // by index: no iterator per request
      HttpField f = headers.getField(i);
      if (f.getHeader() == HttpHeader.TRANSFER_ENCODING) {
        for (String coding : f.getValues()) {
          if (!coding.trim().equalsIgnoreCase("chunked")) {
            return refuse(
                501,
                "not_implemented",
                "Transfer-Encoding '"
                    + f.getValue()
                    + "' is not supported; send the body uncompressed, with Content-Length or"
                    + " Transfer-Encoding: chunked");
          }
        }
      } else if (f.getHeader() == HttpHeader.CONTENT_ENCODING) {
        for (String coding : f.getValues()) {
          if (!coding.trim().equalsIgnoreCase("identity")) {
            return refuse(
                415,
                "unsupported_encoding",
                "Content-Encoding '"
                    + f.getValue()
                    + "' is not supported; send the JSON body uncompressed, without"
                    + " Content-Encoding");
          }
        }
      }
    }
    String type = headers.get(HttpHeader.CONTENT_TYPE);
    if (type == null || Answer.JSON.equals(type)) {
      return null; // no type, or the usual one: nothing to refuse, no parsing on every request
    }
    String[] parts = type.split(";");
    String media = parts[0].trim().toLowerCase(Locale.ROOT);
    if (media.startsWith("multipart/")) {
      return refuse(
          415,
          "unsupported_media_type",
          "a "
              + media
              + " body is not accepted; send the JSON document itself as the body"
              + " (Content-Type: application/json)");
    }
    for (int i = 1; i < parts.length; i++) {
      String param = parts[i].trim();
      int eq = param.indexOf('=');
      if (eq > 0 && param.substring(0, eq).trim().equalsIgnoreCase("charset")) {
        String charset = param.substring(eq + 1).trim().replace("\"", "");
        if (!charset.equalsIgnoreCase("utf-8")
            && !charset.equalsIgnoreCase("utf8")
            && !charset.equalsIgnoreCase("us-ascii")) {
          return refuse(
              415,
              "unsupported_media_type",
              "charset '" + charset + "' is not accepted; send the JSON body in UTF-8");
        }
      }
    }
    return null;
  }

  private static Answer refuse(int status, String code, String message) {
    return Answer.error(status, code, message, Map.of("Connection", "close"));
  }
}
