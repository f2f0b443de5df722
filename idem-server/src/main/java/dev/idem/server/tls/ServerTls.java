package dev.idem.server.tls;

import dev.idem.IdemConfigException;
import dev.idem.server.config.TlsSettings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener's TLS ({@code server.tls}): a Jetty {@link SslContextFactory.Server} loaded from the
 * configured files, and a watcher that reloads it when they change.
 *
 * <ol>
 *   <li>The key store is the PKCS12 {@code keystore}, or is built in memory from the PEM {@code
 *       certificate} chain and {@code private_key}.
 *   <li>The trust store holds every certificate of {@code client_ca} and of each source's {@code
 *       auth.mtls.ca}. With any, the listener <em>wants</em> client certificates (TLS client auth
 *       is requested, not required): a client without one still connects, a client with one that
 *       does not verify fails the handshake, and each source decides whether it needs a verified
 *       certificate ({@code auth.mtls}: {@code 401} without).
 *   <li>Every {@code reload_interval} the files' contents are compared with what was loaded; after
 *       a change the stores are built again and swapped into the running listener (new handshakes
 *       use them; open connections keep their session). A file that does not load (e.g. half
 *       written) is logged at WARN and the old certificate is kept until the files change again.
 * </ol>
 */
public final class ServerTls implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServerTls.class);
  private static final char[] MEMORY_PASSWORD = "idem-in-memory".toCharArray();

  private final TlsSettings settings;
  private final List<Path> caFiles;
  private final SslContextFactory.Server factory;
  private final ScheduledExecutorService watcher;
  private volatile byte[] loaded;
  private volatile byte @Nullable [] failed;

  private ServerTls(TlsSettings settings, List<Path> caFiles) {
    this.settings = settings;
    this.caFiles = caFiles;
    Stores stores = load(settings, caFiles);
    this.loaded = fingerprint();
    this.factory = new SslContextFactory.Server();
    factory.setKeyStore(stores.keys());
    factory.setKeyStorePassword(new String(stores.password()));
    factory.setKeyManagerPassword(new String(stores.password()));
    if (stores.trust() != null) {
      factory.setTrustStore(stores.trust());
      factory.setWantClientAuth(true);
    }
    this.watcher =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "idem-tls-reload");
              t.setDaemon(true);
              return t;
            });
    long every = settings.reloadInterval().toMillis();
    watcher.scheduleWithFixedDelay(this::reloadIfChanged, every, every, TimeUnit.MILLISECONDS);
    LOG.info("TLS on: {}", stores.describe());
  }

  /**
   * Loads the TLS files and starts watching them.
   *
   * @param settings {@code server.tls}
   * @param sourceCas the {@code auth.mtls.ca} files of the sources, trusted too
   * @return the TLS of the listener; close it to stop the watcher
   * @throws IdemConfigException if a file cannot be loaded
   */
  public static ServerTls create(TlsSettings settings, List<Path> sourceCas) {
    Set<Path> cas = new LinkedHashSet<>();
    if (settings.clientCa() != null) {
      cas.add(settings.clientCa());
    }
    cas.addAll(sourceCas);
    return new ServerTls(Objects.requireNonNull(settings, "settings"), List.copyOf(cas));
  }

  /**
   * Checks that the TLS files load (for the config check: a bad file is a located problem).
   *
   * @param settings {@code server.tls}
   * @return true
   * @throws IdemConfigException if a file cannot be loaded
   */
  public static Boolean check(TlsSettings settings) {
    load(settings, settings.clientCa() == null ? List.of() : List.of(settings.clientCa()));
    return Boolean.TRUE;
  }

  /**
   * Returns the factory the TLS connector uses.
   *
   * @return the factory
   */
  public SslContextFactory.Server factory() {
    return factory;
  }

  /**
   * Returns whether client certificates are asked for.
   *
   * @return whether a trust store is configured
   */
  public boolean clientCertificates() {
    return !caFiles.isEmpty();
  }

  /** Reloads the stores if the files changed; visible for tests, else run by the watcher. */
  void reloadIfChanged() {
    byte[] now;
    try {
      now = fingerprint();
    } catch (IdemConfigException e) {
      warnOnce(null, e.getMessage());
      return;
    }
    if (Arrays.equals(now, loaded) || Arrays.equals(now, failed)) {
      return;
    }
    try {
      Stores stores = load(settings, caFiles);
      factory.reload(
          f -> {
            f.setKeyStore(stores.keys());
            f.setKeyStorePassword(new String(stores.password()));
            f.setKeyManagerPassword(new String(stores.password()));
            if (stores.trust() != null) {
              f.setTrustStore(stores.trust());
            }
          });
      loaded = now;
      failed = null;
      LOG.info("TLS files changed; reloaded: {}", stores.describe());
    } catch (Exception e) {
      warnOnce(now, e.getMessage());
    }
  }

  private void warnOnce(byte @Nullable [] now, @Nullable String why) {
    failed = now;
    LOG.warn(
        "TLS files changed but do not load ({}); still serving the certificate loaded before", why);
  }

  private byte[] fingerprint() {
    List<Path> files = new ArrayList<>();
    if (settings.keystore() != null) {
      files.add(settings.keystore());
    } else {
      files.add(Objects.requireNonNull(settings.certificate()));
      files.add(Objects.requireNonNull(settings.privateKey()));
    }
    files.addAll(caFiles);
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (Path f : files) {
        byte[] content = Files.readAllBytes(f);
        sha.update(f.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        sha.update((byte) 0);
        sha.update(content);
        sha.update((byte) 0);
      }
      return sha.digest();
    } catch (IOException | GeneralSecurityException e) {
      throw new IdemConfigException("cannot read the TLS files (" + e + ")");
    }
  }

  private record Stores(
      KeyStore keys, char[] password, @Nullable KeyStore trust, String describe) {}

  private static Stores load(TlsSettings s, List<Path> caFiles) {
    KeyStore keys;
    char[] password;
    X509Certificate leaf;
    try {
      if (s.keystore() != null) {
        Path file = s.keystore();
        password = s.keystorePassword() == null ? new char[0] : s.keystorePassword().toCharArray();
        keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(file)) {
          keys.load(in, password);
        } catch (IOException e) {
          throw new IdemConfigException(
              "keystore: cannot load "
                  + file
                  + " as PKCS12 ("
                  + e.getMessage()
                  + "); check the file and keystore_password");
        }
        leaf = firstKeyCertificate(keys, file);
      } else {
        List<X509Certificate> chain =
            Pem.certificates(Objects.requireNonNull(s.certificate()), "certificate");
        PrivateKey key = Pem.privateKey(Objects.requireNonNull(s.privateKey()), "private_key");
        if (!chain.get(0).getPublicKey().getAlgorithm().equals(key.getAlgorithm())) {
          throw new IdemConfigException(
              "private_key: "
                  + s.privateKey()
                  + " is a "
                  + key.getAlgorithm()
                  + " key, but the certificate's key is "
                  + chain.get(0).getPublicKey().getAlgorithm()
                  + "; give the key of the first certificate in "
                  + s.certificate());
        }
        checkPair(key, chain.get(0), s);
        password = MEMORY_PASSWORD;
        keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        keys.setKeyEntry("idem", key, password, chain.toArray(new Certificate[0]));
        leaf = chain.get(0);
      }
      KeyStore trust = null;
      int trusted = 0;
      if (!caFiles.isEmpty()) {
        trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        for (Path f : caFiles) {
          for (X509Certificate ca : Pem.certificates(f, "client_ca")) {
            trust.setCertificateEntry("ca-" + trusted++, ca);
          }
        }
      }
      String describe =
          "certificate "
              + leaf.getSubjectX500Principal().getName()
              + " valid until "
              + leaf.getNotAfter().toInstant()
              + (trust == null
                  ? "; no client certificates asked for"
                  : "; client certificates verified against " + trusted + " CA certificate(s)");
      return new Stores(keys, password, trust, describe);
    } catch (IOException | GeneralSecurityException e) {
      throw new IdemConfigException("cannot load the TLS key store (" + e.getMessage() + ")");
    }
  }

  /** A certificate and key renewed one file at a time must not be served half-swapped. */
  private static void checkPair(PrivateKey key, X509Certificate cert, TlsSettings s)
      throws GeneralSecurityException {
    String alg =
        switch (key.getAlgorithm()) {
          case "EC" -> "SHA256withECDSA";
          case "RSA" -> "SHA256withRSA";
          default -> key.getAlgorithm();
        };
    byte[] probe = "idem-tls-key-check".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    Signature signer = Signature.getInstance(alg);
    signer.initSign(key);
    signer.update(probe);
    byte[] signature = signer.sign();
    Signature verifier = Signature.getInstance(alg);
    verifier.initVerify(cert.getPublicKey());
    verifier.update(probe);
    if (!verifier.verify(signature)) {
      throw new IdemConfigException(
          "private_key: "
              + s.privateKey()
              + " is not the key of the first certificate in "
              + s.certificate()
              + "; give the matching pair");
    }
  }

  private static X509Certificate firstKeyCertificate(KeyStore keys, Path file)
      throws GeneralSecurityException {
    Enumeration<String> aliases = keys.aliases();
    while (aliases.hasMoreElements()) {
      String alias = aliases.nextElement();
      if (keys.isKeyEntry(alias) && keys.getCertificate(alias) instanceof X509Certificate c) {
        return c;
      }
    }
    throw new IdemConfigException(
        "keystore: " + file + " holds no private key with a certificate; give the server's key");
  }

  /** Stops the watcher. */
  @Override
  public void close() {
    watcher.shutdownNow();
  }
}
