package dev.idem.server.auth;

import dev.idem.IdemConfigException;
import dev.idem.server.tls.Pem;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A webhook source's mutual-TLS caller authentication ({@code source.webhook.auth.mtls}): each
 * request must come over {@code server.tls} with a client certificate the TLS handshake verified;
 * the caller's principal is the certificate's (issuer, subject).
 *
 * @param ca a PEM file of CA certificates: only client certificates issued under one of them are
 *     accepted here (they are trusted by the listener too); or null to accept any client
 *     certificate the listener verified ({@code server.tls.client_ca})
 */
public record MtlsSettings(@Nullable Path ca) {

  /**
   * Validates the CA file.
   *
   * @throws IdemConfigException if the file cannot be read or holds no certificate
   */
  public MtlsSettings {
    if (ca != null) {
      Pem.certificates(ca, "ca");
    }
  }

  /**
   * Reads the CA certificates.
   *
   * @return the certificates, empty without {@code ca}
   * @throws IdemConfigException if the file cannot be read
   */
  public List<X509Certificate> caCertificates() {
    return ca == null ? List.of() : Pem.certificates(ca, "ca");
  }
}
