package dev.idem.server.tenant;

import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.idem.TimeSource;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Date;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15, tenants: the same key in two tenants is delivered twice, once each; clearing one tenant
 * leaves the other's keys; a missing tenant is 400; the admin API takes a tenant. Over real HTTP,
 * with a RocksDB store (durable, so {@code window: forever} is allowed) and a memory store.
 */
class TenantsHttpTest {
  static final String TOKEN = "tenant-test-admin-token-0123456789";
  static final String SECRET = "a-shared-hmac-secret-of-at-least-32-bytes!";

  @TempDir static Path dir;

  static TestEdge edge;
  static IdemServer server;
  static Http http;

  @BeforeAll
  static void start() {
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0, admin_token: %1$s }
        store: { type: rocksdb, path: "%2$s" }
        pipelines:
          - id: by-header
            tenant: header("X-Tenant")
            source: { webhook: { path: /hooks/header } }
            dedup: { key: source.id, window: forever }
            deliver: { stdout: {} }
          - id: by-field
            tenant: source.shop
            source: { webhook: { path: /hooks/field } }
            dedup: { key: source.id }
            deliver: { stdout: {} }
          - id: by-claim
            tenant: claim("tid")
            source:
              webhook:
                path: /hooks/claim
                auth: { jwt: { secret: "%3$s", algorithms: [HS256] } }
            dedup: { window: 7d }
            deliver: { stdout: {} }
          - id: on-memory
            tenant: header("X-Tenant")
            source: { webhook: { path: /hooks/memory } }
            dedup: { key: source.id, store: { type: memory } }
            deliver: { stdout: {} }
        """
            .formatted(TOKEN, dir.resolve("data"), SECRET);
    IdemConfig config = ConfigLoader.parse("tenants.yaml", yaml, n -> null);
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
  }

  private static HttpResponse<String> post(String path, String tenant, String body) {
    return http.post(path, body, "Content-Type", "application/json", "X-Tenant", tenant);
  }

  private static long delivered(String pipeline, String body) {
    var sink = edge.sinks.get(pipeline);
    return sink == null ? 0 : sink.bodies().stream().filter(body::equals).count();
  }

  private static String id() {
    return UUID.randomUUID().toString();
  }

  @Test
  void theSameKeyInTwoTenantsIsDeliveredTwiceOnceEach() {
    for (String path : new String[] {"/hooks/header", "/hooks/memory"}) {
      String pipeline = path.equals("/hooks/header") ? "by-header" : "on-memory";
      String body = "{\"id\":\"" + id() + "\"}";

      HttpResponse<String> a1 = post(path, "acme", body);
      HttpResponse<String> b1 = post(path, "globex", body);
      HttpResponse<String> a2 = post(path, "acme", body);
      HttpResponse<String> b2 = post(path, "globex", body);

      assertThat(a1.statusCode()).as(a1.body()).isEqualTo(202);
      assertThat(b1.statusCode()).as(b1.body()).isEqualTo(202);
      assertThat(a2.statusCode()).isEqualTo(200);
      assertThat(a2.body()).contains("\"duplicate\":true");
      assertThat(b2.statusCode()).isEqualTo(200);
      assertThat(delivered(pipeline, body)).as(pipeline).isEqualTo(2);
    }
  }

  @Test
  void clearingOneTenantLeavesTheOthersKeys() {
    for (String pipeline : new String[] {"by-header", "on-memory"}) {
      String path = pipeline.equals("by-header") ? "/hooks/header" : "/hooks/memory";
      String acme = "acme-" + id();
      String globex = "globex-" + id();
      String body = "{\"id\":\"" + id() + "\"}";
      assertThat(post(path, acme, body).statusCode()).isEqualTo(202);
      assertThat(post(path, globex, body).statusCode()).isEqualTo(202);

      HttpResponse<String> cleared =
          http.delete(
              "/admin/pipelines/" + pipeline + "/keys?tenant=" + acme,
              "Authorization",
              "Bearer " + TOKEN);

      assertThat(cleared.statusCode()).as(cleared.body()).isEqualTo(200);
      assertThat(cleared.body()).contains("\"tenant\":\"" + acme + "\"").contains("\"removed\":1");
      assertThat(post(path, acme, body).statusCode()).as("acme's key is gone").isEqualTo(202);
      assertThat(post(path, globex, body).statusCode()).as("globex keeps its key").isEqualTo(200);
      assertThat(delivered(pipeline, body)).isEqualTo(3);
    }
  }

  @Test
  void aMissingTenantIs400AndNothingIsRecorded() {
    String body = "{\"id\":\"" + id() + "\",\"shop\":\"\"}";

    HttpResponse<String> noHeader = http.post("/hooks/header", body);
    HttpResponse<String> blankField = http.post("/hooks/field", body);
    HttpResponse<String> objectField = http.post("/hooks/field", "{\"id\":\"1\",\"shop\":{}}");

    assertThat(noHeader.statusCode()).isEqualTo(400);
    assertThat(noHeader.body()).contains("no tenant: header X-Tenant is missing or blank");
    assertThat(blankField.statusCode()).isEqualTo(400);
    assertThat(blankField.body()).contains("no tenant");
    assertThat(objectField.statusCode()).isEqualTo(400);
    assertThat(objectField.body()).contains("a tenant is a string or a whole number");
    assertThat(delivered("by-header", body) + delivered("by-field", body)).isZero();
  }

  @Test
  void aBodyFieldNamesTheTenant() {
    String one = id();
    String a = "{\"id\":\"" + one + "\",\"shop\":\"shop-1\"}";
    String b = "{\"id\":\"" + one + "\",\"shop\":\"shop-2\"}";
    String numeric = "{\"id\":\"" + one + "\",\"shop\":42}";

    assertThat(http.post("/hooks/field", a).statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/field", b).statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/field", numeric).statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/field", a).statusCode()).isEqualTo(200);
  }

  @Test
  void aTokenClaimNamesTheTenantAndTheChainStillKeys() throws Exception {
    String body = "{\"order\":\"" + id() + "\"}";

    int first =
        http.post("/hooks/claim", body, "Authorization", bearer("alice", "t1")).statusCode();
    int otherTenant =
        http.post("/hooks/claim", body, "Authorization", bearer("alice", "t2")).statusCode();
    int again =
        http.post("/hooks/claim", body, "Authorization", bearer("alice", "t1")).statusCode();
    HttpResponse<String> noClaim =
        http.post("/hooks/claim", body, "Authorization", bearer("alice", null));

    assertThat(first).isEqualTo(202);
    assertThat(otherTenant).isEqualTo(202);
    assertThat(again).isEqualTo(200);
    assertThat(noClaim.statusCode()).isEqualTo(400);
    assertThat(noClaim.body()).contains("claim \\\"tid\\\" is missing");
    assertThat(delivered("by-claim", body)).isEqualTo(2);
  }

  @Test
  void theAdminApiTakesATenant() {
    String tenant = "acme-" + id();
    String key = id();
    assertThat(post("/hooks/header", tenant, "{\"id\":\"" + key + "\"}").statusCode())
        .isEqualTo(202);
    String auth = "Bearer " + TOKEN;

    HttpResponse<String> inTenant =
        http.get(
            "/admin/pipelines/by-header/keys/" + key + "?tenant=" + tenant, "Authorization", auth);
    HttpResponse<String> otherTenant =
        http.get("/admin/pipelines/by-header/keys/" + key + "?tenant=other", "Authorization", auth);
    HttpResponse<String> noTenant =
        http.get("/admin/pipelines/by-header/keys/" + key, "Authorization", auth);
    HttpResponse<String> clearAll =
        http.delete("/admin/pipelines/by-header/keys", "Authorization", auth);
    HttpResponse<String> forget =
        http.delete(
            "/admin/pipelines/by-header/keys/" + key + "?tenant=" + tenant, "Authorization", auth);

    assertThat(inTenant.statusCode()).isEqualTo(200);
    assertThat(inTenant.body()).contains("\"state\":\"committed\"").contains("\"expires_at\":null");
    assertThat(otherTenant.body()).contains("\"state\":\"absent\"");
    assertThat(noTenant.statusCode()).isEqualTo(400);
    assertThat(noTenant.body()).contains("?tenant=");
    assertThat(clearAll.statusCode()).isEqualTo(400);
    assertThat(clearAll.body()).contains("tenant_required");
    assertThat(forget.body()).contains("\"forgotten\":true");
    assertThat(post("/hooks/header", tenant, "{\"id\":\"" + key + "\"}").statusCode())
        .isEqualTo(202);
  }

  private static String bearer(String subject, String tenant) throws Exception {
    JWTClaimsSet.Builder c =
        new JWTClaimsSet.Builder()
            .subject(subject)
            .expirationTime(Date.from(Instant.now().plusSeconds(300)));
    if (tenant != null) {
      c.claim("tid", tenant);
    }
    SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), c.build());
    jwt.sign(new MACSigner(SECRET.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    return "Bearer " + jwt.serialize();
  }
}
