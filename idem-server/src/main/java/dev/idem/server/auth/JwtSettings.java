package dev.idem.server.auth;

import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.KeyType;
import com.nimbusds.jose.jwk.RSAKey;
import dev.idem.IdemConfigException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A webhook source's JWT caller authentication ({@code source.webhook.auth.jwt}). Exactly one key
 * source is set: {@code jwksUrl}, {@code publicKey} or {@code secret}.
 *
 * @param issuer the required {@code iss}, or null to accept any issuer (the chain still records it)
 * @param audience the required {@code aud} value, or null to accept any audience
 * @param jwksUrl the JWKS endpoint (https, or http on a loopback address), or null
 * @param publicKey a PEM file with one RSA or EC public key, or null
 * @param secret the shared HS256/384/512 secret, or null
 * @param algorithms the allow-list; all asymmetric (RS*, PS*, ES*) or all HS*, never mixed, and
 *     fitting the key source
 * @param leeway the clock skew allowed on {@code exp} and {@code nbf}, from 0 to {@link
 *     #MAX_LEEWAY}
 * @param maxDelegationDepth how many nested {@code act} claims are accepted, from 0 to {@link
 *     #MAX_MAX_DELEGATION_DEPTH}; deeper is {@code 403 delegation_too_deep}
 */
public record JwtSettings(
    @Nullable String issuer,
    @Nullable String audience,
    @Nullable URI jwksUrl,
    @Nullable Path publicKey,
    @Nullable String secret,
    List<String> algorithms,
    Duration leeway,
    int maxDelegationDepth) {

  /** The default leeway: 60 seconds. */
  public static final Duration DEFAULT_LEEWAY = Duration.ofSeconds(60);

  /** The largest leeway: 5 minutes. */
  public static final Duration MAX_LEEWAY = Duration.ofMinutes(5);

  /** The default delegation depth: 4 nested {@code act} claims. */
  public static final int DEFAULT_MAX_DELEGATION_DEPTH = 4;

  /** The largest delegation depth accepted in config. */
  public static final int MAX_MAX_DELEGATION_DEPTH = 16;

  private static final List<String> ASYMMETRIC =
      List.of("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512");
  private static final List<String> HMAC = List.of("HS256", "HS384", "HS512");

  /**
   * Validates the fields; a {@code publicKey} file is read to check that the algorithms fit it.
   *
   * @throws IdemConfigException naming the field and the fix
   */
  public JwtSettings {
    for (String a : algorithms) {
      if (a == null) {
        throw new IdemConfigException("algorithms has an empty entry; list names, e.g. [RS256]");
      }
    }
    algorithms = List.copyOf(algorithms);
    Objects.requireNonNull(leeway, "leeway");
    int sources =
        (jwksUrl == null ? 0 : 1) + (publicKey == null ? 0 : 1) + (secret == null ? 0 : 1);
    if (sources != 1) {
      throw new IdemConfigException(
          "give exactly one of jwks_url, public_key and secret (got "
              + sources
              + "): jwks_url for an identity provider's key set, public_key for one PEM file,"
              + " secret for HS256");
    }
    if (issuer != null && issuer.isBlank()) {
      throw new IdemConfigException("issuer is blank; give the token issuer (iss) or leave it out");
    }
    if (audience != null && audience.isBlank()) {
      throw new IdemConfigException(
          "audience is blank; give the audience (aud) tokens must carry or leave it out");
    }
    if (algorithms.isEmpty()) {
      throw new IdemConfigException(
          "algorithms is required; list the JWS algorithms the issuer signs with, e.g. [RS256]");
    }
    for (String a : algorithms) {
      if (!ASYMMETRIC.contains(a) && !HMAC.contains(a)) {
        throw new IdemConfigException(
            "algorithms: '"
                + a
                + "' is not allowed; use RS256/384/512, PS256/384/512, ES256/384/512 or"
                + " HS256/384/512 ('none' is never accepted)");
      }
    }
    boolean hmac = HMAC.contains(algorithms.get(0));
    for (String a : algorithms) {
      if (HMAC.contains(a) != hmac) {
        throw new IdemConfigException(
            "algorithms mixes HS* with RS*/PS*/ES* ("
                + algorithms
                + "); one key source verifies one family only, or a public key could be used as"
                + " an HMAC secret");
      }
    }
    if (hmac != (secret != null)) {
      throw new IdemConfigException(
          hmac
              ? "algorithms "
                  + algorithms
                  + " need a secret; jwks_url and public_key are for"
                  + " RS*/PS*/ES*"
              : "a secret verifies HS256/384/512 only; set algorithms: [HS256]");
    }
    if (secret != null) {
      int needed = algorithms.contains("HS512") ? 64 : algorithms.contains("HS384") ? 48 : 32;
      if (secret.getBytes(StandardCharsets.UTF_8).length < needed) {
        throw new IdemConfigException(
            "secret is shorter than "
                + needed
                + " bytes, the least RFC 7518 allows for "
                + algorithms
                + "; use a longer random secret");
      }
    }
    if (jwksUrl != null) {
      checkJwksUrl(jwksUrl);
    }
    if (publicKey != null) {
      JWK key = readPublicKey(publicKey);
      String family = key.getKeyType().equals(KeyType.EC) ? "ES" : "RS/PS";
      for (String a : algorithms) {
        boolean fits =
            key.getKeyType().equals(KeyType.EC) ? a.startsWith("ES") : !a.startsWith("ES");
        if (!fits) {
          throw new IdemConfigException(
              "algorithms: "
                  + a
                  + " does not fit the "
                  + key.getKeyType()
                  + " key in "
                  + publicKey
                  + "; use "
                  + family
                  + " algorithms");
        }
      }
    }
    if (leeway.isNegative() || leeway.compareTo(MAX_LEEWAY) > 0) {
      throw new IdemConfigException("leeway must be from 0s to 5m, got " + leeway);
    }
    if (maxDelegationDepth < 0 || maxDelegationDepth > MAX_MAX_DELEGATION_DEPTH) {
      throw new IdemConfigException(
          "max_delegation_depth must be from 0 to "
              + MAX_MAX_DELEGATION_DEPTH
              + ", got "
              + maxDelegationDepth);
    }
  }

  /**
   * Returns the allow-list as nimbus algorithms.
   *
   * @return the algorithms
   */
  public List<JWSAlgorithm> jwsAlgorithms() {
    return algorithms.stream().map(JWSAlgorithm::parse).toList();
  }

  /**
   * Reads a PEM file holding one RSA or EC public key.
   *
   * @param file the file
   * @return the key
   * @throws IdemConfigException if the file cannot be read or holds no such key
   */
  public static JWK readPublicKey(Path file) {
    String pem;
    try {
      pem = Files.readString(file, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IdemConfigException(
          "public_key: cannot read "
              + file
              + " ("
              + e.getMessage()
              + "); give a readable PEM file");
    }
    String begin = "-----BEGIN PUBLIC KEY-----";
    String end = "-----END PUBLIC KEY-----";
    int from = pem.indexOf(begin);
    int to = pem.indexOf(end);
    if (from < 0 || to < from) {
      throw new IdemConfigException(
          "public_key: "
              + file
              + " holds no public key in PEM (-----BEGIN PUBLIC KEY-----); give the issuer's"
              + " public key, not a certificate or a private key");
    }
    byte[] der;
    try {
      der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
    } catch (IllegalArgumentException e) {
      throw new IdemConfigException("public_key: " + file + " is not valid PEM (bad base64)");
    }
    for (String type : new String[] {"RSA", "EC"}) {
      PublicKey k;
      try {
        k = KeyFactory.getInstance(type).generatePublic(new X509EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        continue;
      }
      if (k instanceof RSAPublicKey r) {
        return new RSAKey.Builder(r).build();
      }
      if (k instanceof ECPublicKey ec) {
        Curve curve = Curve.forECParameterSpec(ec.getParams());
        if (curve == null) {
          throw new IdemConfigException(
              "public_key: " + file + " holds an EC key on a curve JWS does not use; use P-256");
        }
        return new ECKey.Builder(curve, ec).build();
      }
    }
    throw new IdemConfigException("public_key: " + file + " holds no RSA or EC public key");
  }

  private static void checkJwksUrl(URI url) {
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
    if (url.getHost() == null || !(scheme.equals("https") || scheme.equals("http"))) {
      throw new IdemConfigException(
          "jwks_url: '"
              + url
              + "' is not an http(s) URL; give e.g. https://issuer/.well-known/jwks.json");
    }
    if (scheme.equals("http") && !loopback(url.getHost())) {
      throw new IdemConfigException(
          "jwks_url: '"
              + url
              + "' is plain http to another host; keys must come over https (http is for"
              + " loopback only)");
    }
  }

  private static boolean loopback(String host) {
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    String h = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    if (!h.matches("[0-9.]+|[0-9A-Fa-f:]+")) {
      return false;
    }
    try {
      return InetAddress.getByName(h).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }
}
