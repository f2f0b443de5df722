package dev.idem.server.auth;

import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.auth.CallerException.Reason;
import dev.idem.server.tls.Pem;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import javax.security.auth.x500.X500Principal;
import org.jspecify.annotations.Nullable;

/**
 * Authenticates callers by their TLS client certificate ({@code auth.mtls}). The TLS handshake has
 * verified the certificate chain against {@code server.tls.client_ca} and the sources' {@code
 * mtls.ca} files; the transport then hands the verified certificate over as three pseudo-headers,
 * which no client can set (the edge answers them itself, never from the wire):
 *
 * <ul>
 *   <li>{@link #ISSUER}: the client certificate's issuer DN (RFC 2253);
 *   <li>{@link #SUBJECT}: its subject DN (RFC 2253);
 *   <li>{@link #ANCHOR}: the issuer DN of the last certificate the client sent, the CA the chain
 *       was verified against.
 * </ul>
 *
 * <ol>
 *   <li>No verified certificate: {@code 401 client_certificate_required}.
 *   <li>A chain verified against a CA that is not this source's: {@code 403
 *       client_certificate_not_accepted}. The source's CAs are those of {@code mtls.ca}, or without
 *       it those of {@code server.tls.client_ca} (so another source's {@code mtls.ca} is never
 *       accepted here). CAs are told apart by their subject names: give them distinct names.
 *   <li>The chain is one principal: (issuer DN, subject DN). Two certificates with different
 *       subjects, or the same subject from two CAs, are two callers.
 * </ol>
 */
public final class MtlsCallers implements CallerAuthenticator {
  /** The pseudo-header holding the verified client certificate's issuer DN. */
  public static final String ISSUER = ":idem-tls-client-issuer";

  /** The pseudo-header holding the verified client certificate's subject DN. */
  public static final String SUBJECT = ":idem-tls-client-subject";

  /** The pseudo-header holding the DN of the CA the client's chain was verified against. */
  public static final String ANCHOR = ":idem-tls-client-anchor";

  private final Set<String> anchors;
  private final CallerRefusals refusals;

  private MtlsCallers(
      String source, MtlsSettings settings, @Nullable Path clientCa, TimeSource time) {
    List<X509Certificate> cas =
        settings.ca() != null
            ? settings.caCertificates()
            : clientCa == null ? List.of() : Pem.certificates(clientCa, "client_ca");
    this.anchors =
        cas.stream()
            .map(c -> c.getSubjectX500Principal().getName(X500Principal.RFC2253))
            .collect(Collectors.toUnmodifiableSet());
    this.refusals = new CallerRefusals(source, time);
  }

  /**
   * Makes the authenticator of one webhook source.
   *
   * @param source the pipeline id, for the log
   * @param settings the settings
   * @param clientCa {@code server.tls.client_ca}, the CAs accepted without {@code mtls.ca}; or null
   * @param time the clock of the log's rate limit
   * @return the authenticator
   * @throws dev.idem.IdemConfigException if a CA file cannot be read, or no CA is given
   */
  public static MtlsCallers create(
      String source, MtlsSettings settings, @Nullable Path clientCa, TimeSource time) {
    if (settings.ca() == null && clientCa == null) {
      throw new dev.idem.IdemConfigException(
          "auth.mtls needs the CA of its callers' certificates; set server.tls.client_ca or"
              + " auth.mtls.ca");
    }
    return new MtlsCallers(
        Objects.requireNonNull(source, "source"),
        Objects.requireNonNull(settings, "settings"),
        clientCa,
        Objects.requireNonNull(time, "time"));
  }

  /**
   * Returns the pseudo-headers of a verified client certificate chain, as a transport hands them
   * over.
   *
   * @param chain the peer's certificates, the client's first, as the TLS session verified them;
   *     null or empty for none
   * @return a lookup of {@link #ISSUER}, {@link #SUBJECT} and {@link #ANCHOR}; null for any other
   *     name, and for all three without a chain
   */
  public static Function<String, @Nullable String> pseudoHeaders(
      X509Certificate @Nullable [] chain) {
    if (chain == null || chain.length == 0) {
      return name -> null;
    }
    String issuer = chain[0].getIssuerX500Principal().getName(X500Principal.RFC2253);
    String subject = chain[0].getSubjectX500Principal().getName(X500Principal.RFC2253);
    String anchor = chain[chain.length - 1].getIssuerX500Principal().getName(X500Principal.RFC2253);
    return name ->
        switch (name) {
          case ISSUER -> issuer;
          case SUBJECT -> subject;
          case ANCHOR -> anchor;
          default -> null;
        };
  }

  @Override
  public List<Principal> principals(Function<String, @Nullable String> headers) {
    try {
      return verify(headers);
    } catch (CallerException e) {
      refusals.log(e);
      throw e;
    }
  }

  private List<Principal> verify(Function<String, @Nullable String> headers) {
    String issuer = headers.apply(ISSUER);
    String subject = headers.apply(SUBJECT);
    if (issuer == null || subject == null) {
      throw new CallerException(
          Reason.CLIENT_CERTIFICATE_REQUIRED,
          "no verified client certificate (plain HTTP, or the client sent none)");
    }
    if (subject.isBlank()) {
      throw new CallerException(
          Reason.CLIENT_CERTIFICATE_REQUIRED,
          "the client certificate has an empty subject (issuer " + issuer + ")");
    }
    String anchor = headers.apply(ANCHOR);
    if (anchor == null || !anchors.contains(anchor)) {
      throw new CallerException(
          Reason.CLIENT_CERTIFICATE_NOT_ACCEPTED,
          "subject "
              + subject
              + " was verified against CA "
              + anchor
              + ", not one of this source's");
    }
    return List.of(new Principal(issuer, subject));
  }
}
