package dev.idem.server.auth;

import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.JWSSigner;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.PlainJWT;
import com.nimbusds.jwt.SignedJWT;
import com.sun.net.httpserver.HttpServer;
import dev.idem.TimeSource;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15: bearer JWTs made here with real RSA and EC keys, verified by the service built from
 * YAML over real HTTP, with the keys from a JWKS that a loopback HTTP server serves and rotates.
 */
class JwtCallersHttpTest {
  static final String ISSUER = "https://issuer.test";
  static final String AUDIENCE = "idem-orders";

  @TempDir static Path dir;

  static RSAKey rsa;
  static ECKey ec;
  static RSAKey rotatedIn;
  static RSAKey pemKey;
  static final AtomicReference<JWKSet> rotating = new AtomicReference<>();
  static final AtomicInteger rotatingFetches = new AtomicInteger();
  static HttpServer jwks;
  static TestEdge edge;
  static IdemServer server;
  static Http http;

  @BeforeAll
  static void start() throws Exception {
    rsa = new RSAKeyGenerator(2048).keyID("rsa-1").generate();
    ec = new ECKeyGenerator(Curve.P_256).keyID("ec-1").generate();
    rotatedIn = new RSAKeyGenerator(2048).keyID("rsa-2").generate();
    pemKey = new RSAKeyGenerator(2048).keyID("pem").generate();
    rotating.set(new JWKSet(rsa.toPublicJWK()));
    JWKSet fixed = new JWKSet(java.util.List.of(rsa.toPublicJWK(), ec.toPublicJWK()));

    jwks = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    jwks.createContext("/fixed/jwks.json", ex -> serve(ex, fixed));
    jwks.createContext(
        "/rotating/jwks.json",
        ex -> {
          rotatingFetches.incrementAndGet();
          serve(ex, rotating.get());
        });
    jwks.start();
    String base = "http://127.0.0.1:" + jwks.getAddress().getPort();

    Path pem = dir.resolve("issuer.pem");
    Files.writeString(pem, pemOf(pemKey));

    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory }
        pipelines:
          - id: orders
            source:
              webhook:
                path: /hooks/orders
                auth:
                  jwt:
                    issuer: %1$s
                    audience: %2$s
                    jwks_url: %3$s/fixed/jwks.json
                    algorithms: [RS256, ES256]
                    max_delegation_depth: 2
            dedup: {}
            deliver: { stdout: {} }
          - id: rotating
            source:
              webhook:
                path: /hooks/rotating
                auth: { jwt: { jwks_url: "%3$s/rotating/jwks.json", algorithms: [RS256] } }
            dedup: {}
            deliver: { stdout: {} }
          - id: pem
            source:
              webhook:
                path: /hooks/pem
                auth: { jwt: { issuer: %1$s, public_key: "%4$s", algorithms: [RS256] } }
            dedup: {}
            deliver: { stdout: {} }
          - id: down
            source:
              webhook:
                path: /hooks/down
                auth: { jwt: { jwks_url: "http://127.0.0.1:%5$d/jwks.json", algorithms: [RS256] } }
            dedup: {}
            deliver: { stdout: {} }
        """
            .formatted(ISSUER, AUDIENCE, base, pem, closedPort());
    IdemConfig config = ConfigLoader.parse("jwt.yaml", yaml, n -> null);
    edge = new TestEdge();
    server =
        IdemServer.start(
            config.server(), ServiceAssembly.assemble(config, edge, TimeSource.system()));
    http = new Http(server.uri());
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    if (jwks != null) {
      jwks.stop(0);
    }
  }

  /** A loopback port nothing listens on (bound, then released). */
  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void serve(com.sun.net.httpserver.HttpExchange ex, JWKSet set) throws IOException {
    byte[] body = set.toString(true).getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().add("Content-Type", "application/json");
    ex.sendResponseHeaders(200, body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  private static String pemOf(RSAKey key) throws JOSEException {
    String b64 =
        Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(key.toPublicKey().getEncoded());
    return "-----BEGIN PUBLIC KEY-----\n" + b64 + "\n-----END PUBLIC KEY-----\n";
  }

  /** Claims valid for the orders pipeline: its issuer and audience, five minutes to live. */
  private static JWTClaimsSet.Builder claims(String subject) {
    Instant now = Instant.now();
    return new JWTClaimsSet.Builder()
        .issuer(ISSUER)
        .audience(AUDIENCE)
        .subject(subject)
        .issueTime(Date.from(now))
        .expirationTime(Date.from(now.plusSeconds(300)));
  }

  private static String sign(JWK key, JWSAlgorithm alg, JWTClaimsSet claims) throws JOSEException {
    JWSSigner signer = key instanceof ECKey e ? new ECDSASigner(e) : new RSASSASigner((RSAKey) key);
    SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(alg).keyID(key.getKeyID()).build(), claims);
    jwt.sign(signer);
    return jwt.serialize();
  }

  private static String rs(JWTClaimsSet claims) throws JOSEException {
    return sign(rsa, JWSAlgorithm.RS256, claims);
  }

  /** An act claim naming {@code subject}, wrapping {@code inner} (the prior actor) if not null. */
  private static Map<String, Object> act(String subject, Map<String, Object> inner) {
    return inner == null ? Map.of("sub", subject) : Map.of("sub", subject, "act", inner);
  }

  private static HttpResponse<String> post(String path, String token, String body) {
    return http.post(
        path, body, "Content-Type", "application/json", "Authorization", "Bearer " + token);
  }

  private static String body() {
    return "{\"order\":\"" + UUID.randomUUID() + "\"}";
  }

  private static long delivered(String pipeline, String body) {
    var sink = edge.sinks.get(pipeline);
    return sink == null ? 0 : sink.bodies().stream().filter(body::equals).count();
  }

  private static void assertRefused(HttpResponse<String> r, String body) {
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("WWW-Authenticate"))
        .hasValue("Bearer error=\"invalid_token\"");
    assertThat(r.body()).contains("\"error\":\"invalid_token\"").contains("nothing was recorded");
    assertThat(delivered("orders", body) + delivered("pem", body)).isZero();
  }

  @Test
  void aValidRsaTokenIsAccepted() throws Exception {
    String body = body();

    HttpResponse<String> r = post("/hooks/orders", rs(claims("alice").build()), body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
    assertThat(delivered("orders", body)).isEqualTo(1);
  }

  @Test
  void aValidEcTokenIsAccepted() throws Exception {
    String body = body();

    HttpResponse<String> r =
        post("/hooks/orders", sign(ec, JWSAlgorithm.ES256, claims("alice").build()), body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
    assertThat(delivered("orders", body)).isEqualTo(1);
  }

  @Test
  void anExpiredTokenIs401AndReservesNothing() throws Exception {
    String body = body();
    Instant past = Instant.now().minusSeconds(3600);
    JWTClaimsSet expired =
        claims("alice").issueTime(Date.from(past)).expirationTime(Date.from(past)).build();

    assertRefused(post("/hooks/orders", rs(expired), body), body);

    // The same caller and body with a valid token is new: the refusal reserved nothing.
    HttpResponse<String> valid = post("/hooks/orders", rs(claims("alice").build()), body);
    assertThat(valid.statusCode()).isEqualTo(202);
    assertThat(valid.body()).contains("\"duplicate\":false");
  }

  @Test
  void aTokenNotYetValidIs401() throws Exception {
    String body = body();
    JWTClaimsSet future =
        claims("alice").notBeforeTime(Date.from(Instant.now().plusSeconds(3600))).build();

    assertRefused(post("/hooks/orders", rs(future), body), body);
  }

  @Test
  void aWrongAudienceOrIssuerIs401() throws Exception {
    String body = body();

    assertRefused(
        post("/hooks/orders", rs(claims("alice").audience("someone-else").build()), body), body);
    assertRefused(
        post("/hooks/orders", rs(claims("alice").issuer("https://evil.test").build()), body), body);
  }

  @Test
  void aMissingOrMalformedAuthorizationIs401() {
    String body = body();

    assertRefused(http.post("/hooks/orders", body, "Content-Type", "application/json"), body);
    assertRefused(post("/hooks/orders", "not-a-jwt", body), body);
    assertRefused(
        http.post("/hooks/orders", body, "Authorization", "Basic YWxpY2U6c2VjcmV0"), body);
  }

  @Test
  void algNoneIs401() {
    String body = body();
    String unsigned = new PlainJWT(claims("alice").build()).serialize();

    assertRefused(post("/hooks/orders", unsigned, body), body);
  }

  @Test
  void anHmacTokenKeyedWithThePublicKeyIs401() throws Exception {
    // Algorithm confusion: HS256 with the RSA public key's bytes as the HMAC secret.
    String body = body();
    String pem = pemOf(pemKey);
    SignedJWT forged = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims("alice").build());
    forged.sign(new MACSigner(pem.getBytes(StandardCharsets.US_ASCII)));
    SignedJWT forgedJwks =
        new SignedJWT(
            new JWSHeader.Builder(JWSAlgorithm.HS256).keyID("rsa-1").build(),
            claims("alice").build());
    forgedJwks.sign(new MACSigner(rsa.toPublicKey().getEncoded()));

    assertRefused(post("/hooks/pem", forged.serialize(), body), body);
    assertRefused(post("/hooks/orders", forgedJwks.serialize(), body), body);
    // The same claims signed with the real key pass.
    assertThat(
            post("/hooks/pem", sign(pemKey, JWSAlgorithm.RS256, claims("alice").build()), body)
                .statusCode())
        .isEqualTo(202);
  }

  @Test
  void anUnknownKidIsFetchedAgainAfterARotation() throws Exception {
    String before = body();
    String after = body();
    String stranger = body();
    assertThat(post("/hooks/rotating", rs(claims("alice").build()), before).statusCode())
        .isEqualTo(202);
    int fetched = rotatingFetches.get();
    assertThat(fetched).isEqualTo(1);

    // The issuer rotates: rsa-2 replaces rsa-1 in the JWKS.
    rotating.set(new JWKSet(rotatedIn.toPublicJWK()));
    HttpResponse<String> r =
        post(
            "/hooks/rotating", sign(rotatedIn, JWSAlgorithm.RS256, claims("alice").build()), after);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
    assertThat(rotatingFetches.get()).isEqualTo(fetched + 1);
    assertThat(delivered("rotating", after)).isEqualTo(1);
    // A kid that no JWKS publishes stays refused (and does not fetch again: rate limited).
    RSAKey unknown = new RSAKeyGenerator(2048).keyID("rsa-unknown").generate();
    HttpResponse<String> u =
        post(
            "/hooks/rotating",
            sign(unknown, JWSAlgorithm.RS256, claims("alice").build()),
            stranger);
    assertThat(u.statusCode()).isEqualTo(401);
    assertThat(delivered("rotating", stranger)).isZero();
  }

  @Test
  void delegationChainsOfDepthZeroOneAndTwoAreAcceptedAndThreeIs403() throws Exception {
    String body = body();
    JWTClaimsSet depth0 = claims("alice").build();
    JWTClaimsSet depth1 = claims("alice").claim("act", act("svc-a", null)).build();
    JWTClaimsSet depth2 = claims("alice").claim("act", act("svc-a", act("svc-b", null))).build();
    JWTClaimsSet depth3 =
        claims("alice").claim("act", act("svc-a", act("svc-b", act("svc-c", null)))).build();

    // One body, three chains: three different keys, three deliveries.
    assertThat(post("/hooks/orders", rs(depth0), body).statusCode()).isEqualTo(202);
    assertThat(post("/hooks/orders", rs(depth1), body).statusCode()).isEqualTo(202);
    assertThat(post("/hooks/orders", rs(depth2), body).statusCode()).isEqualTo(202);
    HttpResponse<String> tooDeep = post("/hooks/orders", rs(depth3), body);

    assertThat(tooDeep.statusCode()).isEqualTo(403);
    assertThat(tooDeep.body()).contains("\"error\":\"delegation_too_deep\"");
    assertThat(delivered("orders", body)).isEqualTo(3);
  }

  @Test
  void twoCallersWithOneBodyAreTwoDeliveriesAndOneCallerTwiceIsOne() throws Exception {
    String body = body();

    HttpResponse<String> alice = post("/hooks/orders", rs(claims("alice").build()), body);
    HttpResponse<String> bob = post("/hooks/orders", rs(claims("bob").build()), body);
    HttpResponse<String> aliceAgain = post("/hooks/orders", rs(claims("alice").build()), body);

    assertThat(alice.statusCode()).isEqualTo(202);
    assertThat(bob.statusCode()).isEqualTo(202);
    assertThat(aliceAgain.statusCode()).isEqualTo(200);
    assertThat(aliceAgain.body()).contains("\"duplicate\":true");
    assertThat(delivered("orders", body)).isEqualTo(2);
  }

  @Test
  void twoDelegatesForOneSubjectAreTwoDeliveriesAndOneChainTwiceIsOne() throws Exception {
    String body = body();
    JWTClaimsSet viaA = claims("alice").claim("act", act("svc-a", null)).build();
    JWTClaimsSet viaB = claims("alice").claim("act", act("svc-b", null)).build();

    HttpResponse<String> a = post("/hooks/orders", rs(viaA), body);
    HttpResponse<String> b = post("/hooks/orders", rs(viaB), body);
    // The same chain, in a freshly signed token (ES256 this time): still a duplicate.
    HttpResponse<String> aAgain =
        post(
            "/hooks/orders",
            sign(ec, JWSAlgorithm.ES256, claims("alice").claim("act", act("svc-a", null)).build()),
            body);

    assertThat(a.statusCode()).isEqualTo(202);
    assertThat(b.statusCode()).isEqualTo(202);
    assertThat(aAgain.statusCode()).isEqualTo(200);
    assertThat(delivered("orders", body)).isEqualTo(2);
  }

  @Test
  void anUnreachableJwksIs503WithRetryAfterAndReservesNothing() throws Exception {
    String body = body();

    HttpResponse<String> r = post("/hooks/down", rs(claims("alice").build()), body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
    assertThat(r.headers().firstValue("Retry-After")).hasValue("5");
    assertThat(r.body()).contains("\"error\":\"keys_unavailable\"");
    assertThat(delivered("down", body)).isZero();
  }
}
