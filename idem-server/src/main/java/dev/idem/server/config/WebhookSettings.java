package dev.idem.server.config;

import dev.idem.IdemConfigException;
import dev.idem.server.auth.HeaderCallers;
import dev.idem.server.auth.JwtSettings;
import dev.idem.server.auth.MtlsSettings;
import dev.idem.server.signature.SignatureSettings;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A webhook source ({@code source.webhook}): POSTs to {@code path} are events of the pipeline.
 *
 * @param path the URL path, starting with {@code /}; not under {@code /admin}, {@code /health} or
 *     {@code /metrics}
 * @param maxBody the largest body accepted, in bytes; larger is {@code 413}
 * @param maxDepth the deepest JSON nesting accepted; deeper is {@code 400}
 * @param signature how signatures are verified, or null for none
 * @param jwt how callers are authenticated by bearer token ({@code auth.jwt}), or null
 * @param mtls how callers are authenticated by TLS client certificate ({@code auth.mtls}), or null
 * @param principalHeader the header a trusted upstream sets to the caller's principal chain ({@code
 *     auth.principal_header}), or null; at most one of {@code jwt}, {@code mtls} and this is set
 */
public record WebhookSettings(
    String path,
    long maxBody,
    int maxDepth,
    @Nullable SignatureSettings signature,
    @Nullable JwtSettings jwt,
    @Nullable MtlsSettings mtls,
    @Nullable String principalHeader)
    implements SourceSettings {

  /** The default body limit: 1 MiB. */
  public static final long DEFAULT_MAX_BODY = 1L << 20;

  /** The largest body limit: 64 MiB (bodies are held in memory while processed). */
  public static final long MAX_MAX_BODY = 64L << 20;

  /** The default nesting limit: 64. */
  public static final int DEFAULT_MAX_DEPTH = 64;

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public WebhookSettings {
    Objects.requireNonNull(path, "path");
    if (!path.matches("/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*") || path.contains("//")) {
      throw new IdemConfigException(
          "path: '"
              + path
              + "' is not a URL path; start it with / and use letters, digits and - _ . ~ /"
              + " (e.g. /hooks/shop/orders)");
    }
    for (String reserved : new String[] {"/admin", "/health", "/metrics"}) {
      if (path.equals(reserved) || path.startsWith(reserved + "/")) {
        throw new IdemConfigException(
            "path: '" + path + "' is reserved for the service's own " + reserved + " endpoint");
      }
    }
    if (maxBody < 1 || maxBody > MAX_MAX_BODY) {
      throw new IdemConfigException(
          "max_body must be from 1 byte to 64MiB, got " + DataSizes.format(maxBody));
    }
    if (maxDepth < 1 || maxDepth > MAX_MAX_DEPTH) {
      throw new IdemConfigException(
          "max_depth must be from 1 to " + MAX_MAX_DEPTH + ", got " + maxDepth);
    }
    int methods =
        (jwt != null ? 1 : 0) + (mtls != null ? 1 : 0) + (principalHeader != null ? 1 : 0);
    if (methods > 1) {
      throw new IdemConfigException(
          "auth: give one of jwt, mtls and principal_header; a source has one kind of caller");
    }
    if (principalHeader != null) {
      HeaderCallers.checkName(principalHeader);
    }
  }

  /**
   * Makes a webhook source with at most bearer-token callers.
   *
   * @param path the URL path
   * @param maxBody the largest body accepted, in bytes
   * @param maxDepth the deepest JSON nesting accepted
   * @param signature how signatures are verified, or null for none
   * @param jwt how callers are authenticated, or null for none
   * @throws IdemConfigException naming the field
   */
  public WebhookSettings(
      String path,
      long maxBody,
      int maxDepth,
      @Nullable SignatureSettings signature,
      @Nullable JwtSettings jwt) {
    this(path, maxBody, maxDepth, signature, jwt, null, null);
  }

  /**
   * Returns whether the source authenticates its callers (then the default key is the principal
   * chain plus the body).
   *
   * @return whether {@code auth} is set
   */
  public boolean callers() {
    return jwt != null || mtls != null || principalHeader != null;
  }

  /**
   * Makes a webhook source without caller authentication.
   *
   * @param path the URL path
   * @param maxBody the largest body accepted, in bytes
   * @param maxDepth the deepest JSON nesting accepted
   * @param signature how signatures are verified, or null for none
   * @throws IdemConfigException naming the field
   */
  public WebhookSettings(
      String path, long maxBody, int maxDepth, @Nullable SignatureSettings signature) {
    this(path, maxBody, maxDepth, signature, null, null, null);
  }

  @Override
  public String type() {
    return "webhook";
  }

  /** Printed by {@link ConfigPrinter} itself, which knows the signature and JWT layouts. */
  @Override
  public java.util.Map<String, Object> printable() {
    return java.util.Map.of("path", path);
  }
}
