package dev.idem.server.auth;

import static dev.idem.server.support.TestCertificates.ca;
import static dev.idem.server.support.TestCertificates.leaf;
import static dev.idem.server.support.TestCertificates.pem;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.TimeSource;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.TestCertificates.Identity;
import dev.idem.server.support.TestEdge;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.UUID;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509KeyManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15, mutual TLS over real TLS: CAs, server and client certificates made here (BouncyCastle),
 * the service built from YAML with {@code server.tls} and {@code auth.mtls}. No client certificate
 * is 401; one from a CA nobody trusts fails the handshake (or, if the client withholds it, 401);
 * one from a trusted CA that is not the source's is 403; a valid one is accepted, and two client
 * certificates sending the same body are two callers (two deliveries); the server certificate is
 * reloaded when its files change.
 */
class MtlsCallersHttpTest {
  @TempDir static Path dir;

  static Identity caA;
  static Identity caB;
  static Identity caRogue;
  static Identity serverId;
  static Identity alice;
  static Identity bob;
  static Identity aliceFromRogue;
  static Identity carolFromB;
  static Path serverPem;
  static Path serverKey;
  static TestEdge edge;
  static IdemServer server;

  @BeforeAll
  static void start() throws Exception {
    caA = ca("CN=Idem Test CA A,O=Idem");
    caB = ca("CN=Idem Test CA B,O=Idem");
    caRogue = ca("CN=Rogue CA,O=Elsewhere");
    serverId = leaf("CN=idem-1", caA, true);
    alice = leaf("CN=svc-alice,O=Idem", caA, false);
    bob = leaf("CN=svc-bob,O=Idem", caA, false);
    aliceFromRogue = leaf("CN=svc-alice,O=Idem", caRogue, false);
    carolFromB = leaf("CN=svc-carol,O=Idem", caB, false);

    serverPem = dir.resolve("server.pem");
    serverKey = dir.resolve("server-key.pem");
    Path caPem = dir.resolve("ca-a.pem");
    Path caBPem = dir.resolve("ca-b.pem");
    Files.writeString(serverPem, pem(serverId.cert()));
    Files.writeString(serverKey, pem(serverId.keys().getPrivate()));
    Files.writeString(caPem, pem(caA.cert()));
    Files.writeString(caBPem, pem(caB.cert()));

    String yaml =
        """
        server:
          host: 127.0.0.1
          port: 0
          tls:
            certificate: "%1$s"
            private_key: "%2$s"
            client_ca: "%3$s"
            reload_interval: 1s
        store: { type: memory }
        pipelines:
          - id: mtls
            source: { webhook: { path: /hooks/mtls, auth: { mtls: {} } } }
            dedup: {}
            deliver: { stdout: {} }
          - id: only-b
            source: { webhook: { path: /hooks/only-b, auth: { mtls: { ca: "%4$s" } } } }
            dedup: {}
            deliver: { stdout: {} }
          - id: open
            source: { webhook: { path: /hooks/open } }
            dedup: {}
            deliver: { stdout: {} }
        """
            .formatted(serverPem, serverKey, caPem, caBPem);
    IdemConfig config = ConfigLoader.parse("mtls.yaml", yaml, n -> null);
    edge = new TestEdge();
    server =
        IdemServer.start(
            config.server(), ServiceAssembly.assemble(config, edge, TimeSource.system()));
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  // --- clients ------------------------------------------------------------------------------

  /** A client that trusts CA A (the server's) and presents {@code id}'s certificate, if any. */
  static HttpClient client(Identity id) throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", caA.cert());
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    KeyManager[] kms = null;
    if (id != null) {
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      keys.setKeyEntry("me", id.keys().getPrivate(), new char[0], new Certificate[] {id.cert()});
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, new char[0]);
      // Always present the certificate, even when the server's CA list does not name its issuer,
      // so that an untrusted certificate really reaches the server.
      kms = new KeyManager[] {new Always((X509KeyManager) kmf.getKeyManagers()[0])};
    }
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kms, tmf.getTrustManagers(), null);
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .sslContext(ctx)
        .connectTimeout(Duration.ofSeconds(5))
        .build();
  }

  /** A key manager that offers its one certificate whatever issuers the server asks for. */
  static final class Always extends X509ExtendedKeyManager {
    private final X509KeyManager km;

    Always(X509KeyManager km) {
      this.km = km;
    }

    @Override
    public String[] getClientAliases(String keyType, Principal[] issuers) {
      return new String[] {"me"};
    }

    @Override
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
      return "me";
    }

    @Override
    public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine e) {
      return "me";
    }

    @Override
    public String[] getServerAliases(String keyType, Principal[] issuers) {
      return null;
    }

    @Override
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
      return null;
    }

    @Override
    public X509Certificate[] getCertificateChain(String alias) {
      return km.getCertificateChain(alias);
    }

    @Override
    public PrivateKey getPrivateKey(String alias) {
      return km.getPrivateKey(alias);
    }
  }

  static HttpResponse<String> post(HttpClient client, String path, String body)
      throws IOException, InterruptedException {
    URI uri = server.uri().resolve(path);
    return client.send(
        HttpRequest.newBuilder(uri)
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  static String body() {
    return "{\"order\":\"" + UUID.randomUUID() + "\"}";
  }

  static long delivered(String pipeline, String body) {
    var sink = edge.sinks.get(pipeline);
    return sink == null ? 0 : sink.bodies().stream().filter(body::equals).count();
  }

  // --- tests --------------------------------------------------------------------------------

  @Test
  void theServerSpeaksTls() {
    assertThat(server.uri().getScheme()).isEqualTo("https");
  }

  @Test
  void aClientWithoutACertificateIs401() throws Exception {
    String body = body();

    HttpResponse<String> r = post(client(null), "/hooks/mtls", body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(401);
    assertThat(r.body())
        .contains("\"error\":\"client_certificate_required\"")
        .contains("nothing was recorded");
    assertThat(delivered("mtls", body)).isZero();
  }

  @Test
  void aSourceWithoutAuthStillTakesClientsWithoutCertificates() throws Exception {
    HttpResponse<String> r = post(client(null), "/hooks/open", body());

    assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
  }

  @Test
  void aCertificateFromAnotherCaIsRefused() throws Exception {
    String body = body();
    Integer status;
    try {
      status = post(client(aliceFromRogue), "/hooks/mtls", body).statusCode();
    } catch (IOException handshakeFailed) {
      status = null; // the listener's trust manager refused the chain
    }

    assertThat(status).as("handshake refused, or 401").isIn(null, 401);
    assertThat(delivered("mtls", body)).isZero();
  }

  @Test
  void aTrustedCertificateFromAnotherSourcesCaIs403() throws Exception {
    String body = body();

    HttpResponse<String> carolOnA = post(client(carolFromB), "/hooks/mtls", body);
    HttpResponse<String> aliceOnB = post(client(alice), "/hooks/only-b", body);
    HttpResponse<String> carolOnB = post(client(carolFromB), "/hooks/only-b", body);

    assertThat(carolOnA.statusCode()).as(carolOnA.body()).isEqualTo(403);
    assertThat(carolOnA.body()).contains("client_certificate_not_accepted");
    assertThat(aliceOnB.statusCode()).isEqualTo(403);
    assertThat(carolOnB.statusCode()).as(carolOnB.body()).isEqualTo(202);
  }

  @Test
  void twoClientCertificatesWithTheSameBodyAreTwoDeliveries() throws Exception {
    String body = body();
    HttpClient a = client(alice);
    HttpClient b = client(bob);

    HttpResponse<String> a1 = post(a, "/hooks/mtls", body);
    HttpResponse<String> b1 = post(b, "/hooks/mtls", body);
    HttpResponse<String> a2 = post(a, "/hooks/mtls", body);
    HttpResponse<String> b2 = post(client(bob), "/hooks/mtls", body);

    assertThat(a1.statusCode()).as(a1.body()).isEqualTo(202);
    assertThat(b1.statusCode()).as(b1.body()).isEqualTo(202);
    assertThat(a2.statusCode()).isEqualTo(200);
    assertThat(b2.statusCode()).isEqualTo(200);
    assertThat(delivered("mtls", body)).isEqualTo(2);
  }

  @Test
  void theSameSubjectFromTwoTrustedCasIsTwoCallers() {
    // The principal is (issuer, subject): the key encoding keeps the issuer apart.
    var trusted = MtlsCallers.pseudoHeaders(new X509Certificate[] {alice.cert()});
    var rogue = MtlsCallers.pseudoHeaders(new X509Certificate[] {aliceFromRogue.cert()});

    assertThat(trusted.apply(MtlsCallers.SUBJECT)).isEqualTo(rogue.apply(MtlsCallers.SUBJECT));
    assertThat(trusted.apply(MtlsCallers.ISSUER)).contains("CN=Idem Test CA A");
    assertThat(rogue.apply(MtlsCallers.ISSUER)).contains("CN=Rogue CA");
    assertThat(trusted.apply("X-Other")).isNull();
  }

  @Test
  void aPseudoHeaderSentByTheClientIsIgnored() throws Exception {
    HttpResponse<String> r =
        client(null)
            .send(
                HttpRequest.newBuilder(server.uri().resolve("/hooks/mtls"))
                    .header("idem-tls-client-subject", "CN=forged")
                    .header("idem-tls-client-issuer", "CN=forged")
                    .POST(HttpRequest.BodyPublishers.ofString(body()))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(401);
  }

  @Test
  void aRenewedServerCertificateIsServedWithoutARestart() throws Exception {
    Identity renewed = leaf("CN=idem-2", caA, true);
    Path tmpCert = dir.resolve("server.pem.new");
    Path tmpKey = dir.resolve("server-key.pem.new");
    Files.writeString(tmpCert, pem(renewed.cert()));
    Files.writeString(tmpKey, pem(renewed.keys().getPrivate()));
    Files.move(tmpKey, serverKey, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    Files.move(tmpCert, serverCert(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);

    await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(300))
        .until(() -> servedSubject().equals("CN=idem-2"));
    assertThat(post(client(alice), "/hooks/open", body()).statusCode()).isEqualTo(202);
  }

  private static Path serverCert() {
    return serverPem;
  }

  private static String servedSubject() throws Exception {
    HttpResponse<String> r =
        client(null)
            .send(
                HttpRequest.newBuilder(server.uri().resolve("/health")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    X509Certificate served =
        (X509Certificate) r.sslSession().orElseThrow().getPeerCertificates()[0];
    return served.getSubjectX500Principal().getName();
  }
}
