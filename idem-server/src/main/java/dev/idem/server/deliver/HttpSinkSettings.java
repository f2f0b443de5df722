package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where and how the HTTP sink POSTs events ({@code deliver.http} in YAML).
 *
 * <p><b>Credentials in the URL.</b> A URL with user info ({@code https://user:pass@host/path}) is
 * honoured as HTTP Basic authentication: the constructor moves it into an {@code Authorization:
 * Basic base64(user:pass)} header (user and password percent-decoded, then UTF-8) and keeps the URL
 * without it, so the request line never carries it and logs never show it. User info without a
 * password, or together with a configured {@code Authorization} header, is refused.
 *
 * @param url an {@code http} or {@code https} URL with a host; user info is moved into {@code
 *     headers} (see above)
 * @param headers extra request headers (e.g. {@code Authorization}); Idem sets {@code
 *     Idempotency-Key}, {@code Content-Length} and {@code Host} itself, so those are refused
 * @param timeout the longest one attempt may take, connecting included (at least 1 ms)
 * @param maxConnections the most connections open to the downstream at once (1 to 10000); more
 *     concurrent attempts queue in the client
 * @param maxResponseBytes the most response-body bytes kept (0 to 64 MiB); the rest is read and
 *     dropped, so a large answer never fails a delivery
 */
public record HttpSinkSettings(
    URI url,
    Map<String, String> headers,
    Duration timeout,
    int maxConnections,
    int maxResponseBytes) {

  /** The default timeout of one attempt: 10 seconds. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

  /** The default connection limit: 64. */
  public static final int DEFAULT_MAX_CONNECTIONS = 64;

  /** The default bound on a kept response body: 1 MiB. */
  public static final int DEFAULT_MAX_RESPONSE_BYTES = 1 << 20;

  private static final Set<String> RESERVED =
      Set.of("idempotency-key", "content-length", "host", "transfer-encoding", "connection");

  /**
   * Validates the fields and copies the headers.
   *
   * @throws IdemConfigException naming the field and what is allowed
   */
  public HttpSinkSettings {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(timeout, "timeout");
    String scheme = url.getScheme();
    if (scheme == null
        || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
        || url.getHost() == null) {
      throw new IdemConfigException(
          "deliver.http.url '"
              + redact(url)
              + "' is not an http or https URL with a host (e.g. http://127.0.0.1:9000/orders)");
    }
    if (url.getRawFragment() != null) {
      throw new IdemConfigException(
          "deliver.http.url '" + redact(url) + "' has a #fragment; remove it");
    }
    for (Map.Entry<String, String> h : headers.entrySet()) {
      String name = h.getKey();
      if (!isToken(name)) {
        throw new IdemConfigException(
            "deliver.http.headers: '" + name + "' is not a valid header name");
      }
      if (RESERVED.contains(name.toLowerCase(Locale.ROOT))) {
        throw new IdemConfigException(
            "deliver.http.headers: '" + name + "' is set by Idem itself; remove it");
      }
      String value = h.getValue();
      if (value == null || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
        throw new IdemConfigException(
            "deliver.http.headers: the value of '" + name + "' must be one line of text");
      }
    }
    if (url.getRawUserInfo() != null) {
      headers = withBasicAuth(url, headers);
      url = withoutUserInfo(url);
    }
    headers = Map.copyOf(headers);
    if (timeout.compareTo(Duration.ofMillis(1)) < 0) {
      throw new IdemConfigException(
          "deliver.http.timeout must be at least 1ms (e.g. 10s), got " + timeout);
    }
    if (maxConnections < 1 || maxConnections > 10_000) {
      throw new IdemConfigException(
          "deliver.http max connections must be 1 to 10000, got " + maxConnections);
    }
    if (maxResponseBytes < 0 || maxResponseBytes > 64 << 20) {
      throw new IdemConfigException(
          "deliver.http max response bytes must be 0 to 64MiB, got " + maxResponseBytes);
    }
  }

  /**
   * Settings with the default connection limit and response bound.
   *
   * @param url an http or https URL
   * @param headers extra request headers
   * @param timeout the longest one attempt may take
   */
  public HttpSinkSettings(URI url, Map<String, String> headers, Duration timeout) {
    this(url, headers, timeout, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_RESPONSE_BYTES);
  }

  /**
   * Settings with no extra headers and every default.
   *
   * @param url an http or https URL
   * @return the settings
   */
  public static HttpSinkSettings of(URI url) {
    return new HttpSinkSettings(url, Map.of(), DEFAULT_TIMEOUT);
  }

  /**
   * Adds the {@code Authorization: Basic} header that the URL's {@code user:password@} asks for.
   */
  private static Map<String, String> withBasicAuth(URI url, Map<String, String> headers) {
    String raw = Objects.requireNonNull(url.getRawUserInfo());
    int colon = raw.indexOf(':');
    if (colon < 0) {
      throw new IdemConfigException(
          "deliver.http.url '"
              + redact(url)
              + "' has a user name but no password before '@'; write user:password@ (percent-encode"
              + " ':' and '@' inside them), or set deliver.http.headers.Authorization instead");
    }
    for (String name : headers.keySet()) {
      if (name.equalsIgnoreCase("Authorization")) {
        throw new IdemConfigException(
            "deliver.http.url '"
                + redact(url)
                + "' has user:password@ and deliver.http.headers has Authorization too; keep one");
      }
    }
    String credentials =
        percentDecode(raw.substring(0, colon), url)
            + ":"
            + percentDecode(raw.substring(colon + 1), url);
    Map<String, String> out = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    out.putAll(headers);
    out.put(
        "Authorization",
        "Basic "
            + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
    return out;
  }

  private static String percentDecode(String s, URI url) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        int hi = i + 2 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
        int lo = hi < 0 ? -1 : Character.digit(s.charAt(i + 2), 16);
        if (lo < 0) {
          throw new IdemConfigException(
              "deliver.http.url '"
                  + redact(url)
                  + "' has a malformed %-escape in its user info; write %XX with two hex digits");
        }
        out.write(hi * 16 + lo);
        i += 2;
      } else {
        int end = s.indexOf('%', i);
        end = end < 0 ? s.length() : end;
        byte[] b = s.substring(i, end).getBytes(StandardCharsets.UTF_8);
        out.write(b, 0, b.length);
        i = end - 1;
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private static URI withoutUserInfo(URI url) {
    StringBuilder s = new StringBuilder();
    s.append(url.getScheme())
        .append("://")
        .append(url.getRawAuthority().substring(url.getRawUserInfo().length() + 1));
    if (url.getRawPath() != null) {
      s.append(url.getRawPath());
    }
    if (url.getRawQuery() != null) {
      s.append('?').append(url.getRawQuery());
    }
    return URI.create(s.toString());
  }

  /** Hides credentials: the URL's user info and query, and the values of secret-looking headers. */
  @Override
  public String toString() {
    Map<String, String> shown = new TreeMap<>();
    headers.forEach((k, v) -> shown.put(k, isSecretHeader(k) ? "***" : v));
    return "HttpSinkSettings[url="
        + redact(url)
        + ", headers="
        + shown
        + ", timeout="
        + timeout
        + ", maxConnections="
        + maxConnections
        + ", maxResponseBytes="
        + maxResponseBytes
        + "]";
  }

  /** The URL without user info and query (either may hold a credential), for logs and errors. */
  static String redact(URI url) {
    StringBuilder s = new StringBuilder();
    if (url.getScheme() != null) {
      s.append(url.getScheme()).append("://");
    }
    if (url.getHost() != null) {
      s.append(url.getHost());
    }
    if (url.getPort() >= 0) {
      s.append(':').append(url.getPort());
    }
    if (url.getRawPath() != null) {
      s.append(url.getRawPath());
    }
    if (url.getRawQuery() != null) {
      s.append("?***");
    }
    return s.toString();
  }

  private static boolean isSecretHeader(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return n.equals("authorization")
        || n.equals("proxy-authorization")
        || n.equals("cookie")
        || n.contains("token")
        || n.contains("secret")
        || n.contains("key")
        || n.contains("signature")
        || n.contains("password");
  }

  private static boolean isToken(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
      if (!ok) {
        return false;
      }
    }
    return true;
  }
}
