package dev.idem.server.tls;

import dev.idem.IdemConfigException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/** Reads certificates and private keys from PEM files, with errors that say what to give. */
public final class Pem {
  private Pem() {}

  /**
   * Reads every certificate of a PEM file, in file order.
   *
   * @param file the file
   * @param field the config field, for the message
   * @return the certificates, at least one
   * @throws IdemConfigException if the file cannot be read or holds no certificate
   */
  public static List<X509Certificate> certificates(Path file, String field) {
    byte[] bytes = read(file, field);
    List<X509Certificate> out = new ArrayList<>();
    try {
      CertificateFactory f = CertificateFactory.getInstance("X.509");
      for (var c : f.generateCertificates(new ByteArrayInputStream(bytes))) {
        out.add((X509Certificate) c);
      }
    } catch (CertificateException e) {
      throw new IdemConfigException(
          field + ": " + file + " holds no valid PEM certificate (" + e.getMessage() + ")");
    }
    if (out.isEmpty()) {
      throw new IdemConfigException(
          field
              + ": "
              + file
              + " holds no certificate; give PEM certificates (-----BEGIN CERTIFICATE-----)");
    }
    return List.copyOf(out);
  }

  /**
   * Reads an unencrypted PKCS#8 private key (RSA or EC) from a PEM file.
   *
   * @param file the file
   * @param field the config field, for the message
   * @return the key
   * @throws IdemConfigException if the file cannot be read or holds no such key
   */
  public static PrivateKey privateKey(Path file, String field) {
    String pem = new String(read(file, field), StandardCharsets.US_ASCII);
    String begin = "-----BEGIN PRIVATE KEY-----";
    String end = "-----END PRIVATE KEY-----";
    int from = pem.indexOf(begin);
    int to = pem.indexOf(end);
    if (from < 0 || to < from) {
      String hint =
          pem.contains("ENCRYPTED PRIVATE KEY")
              ? "it is encrypted"
              : pem.contains("RSA PRIVATE KEY") || pem.contains("EC PRIVATE KEY")
                  ? "it is in the older PKCS#1/SEC1 form"
                  : "it has no -----BEGIN PRIVATE KEY----- block";
      throw new IdemConfigException(
          field
              + ": "
              + file
              + " is not an unencrypted PKCS#8 PEM key ("
              + hint
              + "); convert it with `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.pk8.pem`,"
              + " or use a PKCS12 keystore");
    }
    byte[] der;
    try {
      der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
    } catch (IllegalArgumentException e) {
      throw new IdemConfigException(field + ": " + file + " is not valid PEM (bad base64)");
    }
    for (String type : new String[] {"RSA", "EC", "Ed25519"}) {
      try {
        return KeyFactory.getInstance(type).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // try the next type
      }
    }
    throw new IdemConfigException(field + ": " + file + " holds no RSA, EC or Ed25519 key");
  }

  private static byte[] read(Path file, String field) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new IdemConfigException(
          field + ": cannot read " + file + " (" + e + "); give a readable PEM file");
    }
  }
}
