package dev.idem.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.TestEdge;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** {@code auth.principal_header}: the chain a trusted upstream put in a header (issue 15). */
class HeaderCallersTest {
  private final HeaderCallers callers =
      HeaderCallers.create("p", "X-Principal", TimeSource.system());

  private List<Principal> chain(String value) {
    Map<String, String> headers = value == null ? Map.of() : Map.of("X-Principal", value);
    return callers.principals(headers::get);
  }

  @Test
  void aSubjectAloneIsAChainOfOne() {
    assertThat(chain(" svc-billing ")).containsExactly(new Principal("", "svc-billing"));
  }

  @Test
  void aJsonArrayIsTheChainOutermostFirst() {
    assertThat(chain("[{\"iss\":\"https://idp\",\"sub\":\"alice\"},{\"sub\":\"gw\"}]"))
        .containsExactly(new Principal("https://idp", "alice"), new Principal("", "gw"));
  }

  @Test
  void aMissingOrMalformedPrincipalIs401AndTooLongIs403() {
    assertThatThrownBy(() -> chain(null))
        .isInstanceOfSatisfying(
            CallerException.class,
            e -> assertThat(e.reason()).isEqualTo(CallerException.Reason.MISSING_PRINCIPAL));
    for (String bad : new String[] {" ", "[", "[]", "[{\"iss\":\"x\"}]", "[{\"sub\":1}]", "[1]"}) {
      assertThatThrownBy(() -> chain(bad)).as(bad).isInstanceOf(CallerException.class);
    }
    String tooLong = "[" + "{\"sub\":\"s\"},".repeat(HeaderCallers.MAX_LINKS) + "{\"sub\":\"s\"}]";
    assertThatThrownBy(() -> chain(tooLong))
        .isInstanceOfSatisfying(
            CallerException.class,
            e -> assertThat(e.reason()).isEqualTo(CallerException.Reason.DELEGATION_TOO_DEEP));
  }

  @Test
  void twoPrincipalsSendingOneBodyAreTwoDeliveriesOverHttp() {
    IdemConfig config =
        ConfigLoader.parse(
            "header.yaml",
            """
            server: { host: 127.0.0.1, port: 0 }
            store: { type: memory }
            pipelines:
              - id: relay
                source: { webhook: { path: /relay, auth: { principal_header: X-Principal } } }
                dedup: {}
                deliver: { stdout: {} }
            """,
            n -> null);
    TestEdge edge = new TestEdge();
    try (IdemServer server =
        IdemServer.start(
            config.server(), ServiceAssembly.assemble(config, edge, TimeSource.system()))) {
      Http http = new Http(server.uri());
      String body = "{\"order\":\"" + UUID.randomUUID() + "\"}";

      int a = http.post("/relay", body, "X-Principal", "svc-a").statusCode();
      int b = http.post("/relay", body, "X-Principal", "svc-b").statusCode();
      int again = http.post("/relay", body, "X-Principal", "svc-a").statusCode();
      HttpResponse<String> none = http.post("/relay", body);

      assertThat(a).isEqualTo(202);
      assertThat(b).isEqualTo(202);
      assertThat(again).isEqualTo(200);
      assertThat(none.statusCode()).isEqualTo(401);
      assertThat(none.body()).contains("missing_principal");
      assertThat(edge.sinks.get("relay").bodies()).hasSize(2);
    }
  }
}
