package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where and how the HTTP sink POSTs events ({@code deliver.http} in YAML).
 *
 * @param url an {@code http} or {@code https} URL with a host
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
