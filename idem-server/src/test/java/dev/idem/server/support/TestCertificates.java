package dev.idem.server.support;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/** CAs, server and client certificates for TLS tests (EC P-256, made with BouncyCastle). */
public final class TestCertificates {
  private static final AtomicLong SERIAL = new AtomicLong(1);

  private TestCertificates() {}

  /**
   * A key pair and its certificate.
   *
   * @param keys the key pair
   * @param cert the certificate
   */
  public record Identity(KeyPair keys, X509Certificate cert) {}

  /** A self-signed CA. */
  public static Identity ca(String dn) throws Exception {
    KeyPair keys = ecKeys();
    return new Identity(keys, sign(dn, keys, new X500Name(dn), keys.getPrivate(), true, false));
  }

  /**
   * A certificate issued by {@code issuer}: a server's (SAN 127.0.0.1, localhost) or a client's.
   */
  public static Identity leaf(String dn, Identity issuer, boolean serverCert) throws Exception {
    KeyPair keys = ecKeys();
    return new Identity(
        keys,
        sign(
            dn,
            keys,
            X500Name.getInstance(issuer.cert().getSubjectX500Principal().getEncoded()),
            issuer.keys().getPrivate(),
            false,
            serverCert));
  }

  public static String pem(X509Certificate c) throws Exception {
    return block("CERTIFICATE", c.getEncoded());
  }

  public static String pem(PrivateKey k) {
    return block("PRIVATE KEY", k.getEncoded());
  }

  /**
   * Writes a CA, a server certificate (server.pem, server-key.pem) and the CA (clients-ca.pem) into
   * a directory, as examples/mtls.yaml expects them.
   */
  public static Path writeServerFiles(Path dir) throws Exception {
    Identity ca = ca("CN=Example Clients CA");
    Identity server = leaf("CN=idem.example", ca, true);
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("server.pem"), pem(server.cert()));
    Files.writeString(dir.resolve("server-key.pem"), pem(server.keys().getPrivate()));
    Files.writeString(dir.resolve("clients-ca.pem"), pem(ca.cert()));
    return dir;
  }

  private static String block(String type, byte[] der) {
    String b64 =
        Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return "-----BEGIN " + type + "-----\n" + b64 + "\n-----END " + type + "-----\n";
  }

  private static KeyPair ecKeys() throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(256);
    return g.generateKeyPair();
  }

  private static X509Certificate sign(
      String dn,
      KeyPair subject,
      X500Name issuerDn,
      PrivateKey issuerKey,
      boolean ca,
      boolean server)
      throws Exception {
    Instant now = Instant.now();
    X509v3CertificateBuilder b =
        new JcaX509v3CertificateBuilder(
            issuerDn,
            BigInteger.valueOf(SERIAL.getAndIncrement()),
            Date.from(now.minusSeconds(60)),
            Date.from(now.plus(Duration.ofDays(2))),
            new X500Name(dn),
            subject.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(ca));
    if (ca) {
      b.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    } else {
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      b.addExtension(
          Extension.extendedKeyUsage,
          false,
          new ExtendedKeyUsage(
              server ? KeyPurposeId.id_kp_serverAuth : KeyPurposeId.id_kp_clientAuth));
    }
    if (server) {
      b.addExtension(
          Extension.subjectAlternativeName,
          false,
          new GeneralNames(
              new GeneralName[] {
                new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                new GeneralName(GeneralName.dNSName, "localhost")
              }));
    }
    return new JcaX509CertificateConverter()
        .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKey)));
  }
}
