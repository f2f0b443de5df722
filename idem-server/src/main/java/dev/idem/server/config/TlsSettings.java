package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * TLS on the service's listener ({@code server.tls}). The server's certificate and key come either
 * from PEM files ({@code certificate} and {@code private_key}) or from a PKCS12 keystore ({@code
 * keystore} and {@code keystore_password}). With {@code client_ca} (or any source with {@code
 * auth.mtls}), the listener asks every client for a certificate and verifies it against those CAs;
 * a client without one still connects, and only the sources with {@code auth.mtls} refuse it. The
 * files are checked every {@code reload_interval} and reloaded when they change (a renewed
 * certificate needs no restart); connections already open keep their session.
 *
 * @param certificate a PEM file: the server's certificate, then its intermediates; or null
 * @param privateKey a PEM file with the certificate's unencrypted PKCS#8 private key; or null
 * @param keystore a PKCS12 keystore holding the key and its chain; or null
 * @param keystorePassword the keystore's password, or null for none
 * @param clientCa a PEM file of the CAs whose client certificates are verified, or null
 * @param reloadInterval how often the files are checked for changes
 */
public record TlsSettings(
    @Nullable Path certificate,
    @Nullable Path privateKey,
    @Nullable Path keystore,
    @Nullable String keystorePassword,
    @Nullable Path clientCa,
    Duration reloadInterval) {

  /** The default reload interval: 30 seconds. */
  public static final Duration DEFAULT_RELOAD_INTERVAL = Duration.ofSeconds(30);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public TlsSettings {
    Objects.requireNonNull(reloadInterval, "reloadInterval");
    boolean pem = certificate != null || privateKey != null;
    if (pem && keystore != null) {
      throw new IdemConfigException(
          "give either certificate and private_key (PEM) or keystore (PKCS12), not both");
    }
    if (!pem && keystore == null) {
      throw new IdemConfigException(
          "needs the server's certificate: certificate and private_key (PEM files), or keystore"
              + " (PKCS12)");
    }
    if (pem && (certificate == null || privateKey == null)) {
      throw new IdemConfigException(
          certificate == null
              ? "private_key needs certificate (the PEM certificate chain it belongs to)"
              : "certificate needs private_key (its PEM PKCS#8 key)");
    }
    if (keystorePassword != null && keystore == null) {
      throw new IdemConfigException("keystore_password is only for keystore; remove it");
    }
    if (reloadInterval.compareTo(Duration.ofSeconds(1)) < 0
        || reloadInterval.compareTo(Duration.ofDays(1)) > 0) {
      throw new IdemConfigException(
          "reload_interval must be from 1s to 1d, got " + Durations.format(reloadInterval));
    }
  }

  /** Hides the keystore password. */
  @Override
  public String toString() {
    return "TlsSettings[certificate="
        + certificate
        + ", privateKey="
        + privateKey
        + ", keystore="
        + keystore
        + ", keystorePassword="
        + (keystorePassword == null ? "none" : Masking.MASK)
        + ", clientCa="
        + clientCa
        + ", reloadInterval="
        + reloadInterval
        + "]";
  }
}
