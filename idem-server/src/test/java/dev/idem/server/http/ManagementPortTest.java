package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.support.Http;
import dev.idem.server.support.TestService;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * Issue 8: with {@code server.management_port}, {@code /metrics} is served only on the management
 * port (the webhook port is often public), {@code /health} on both, and the management port serves
 * nothing else.
 */
class ManagementPortTest {
  static final String YAML =
      """
      store: { type: memory }
      pipelines:
        - id: p
          source: { webhook: { path: /hooks/p } }
          dedup: { key: source.id }
          deliver: { stdout: {} }
      """;

  @Test
  void metricsMoveToTheManagementPort() {
    try (TestService s =
        TestService.start(YAML, "mgmt-admin-token-0123456789", l -> l.withManagementPort(0))) {
      Http management = new Http(s.server.managementUri());
      assertThat(s.http.post("/hooks/p", "{\"id\":\"m-1\"}").statusCode()).isEqualTo(202);

      HttpResponse<String> metrics = management.get("/metrics");
      HttpResponse<String> publicMetrics = s.http.get("/metrics");

      assertThat(s.server.managementPort()).isPositive().isNotEqualTo(s.server.port());
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body()).contains("idem_http_requests_total");
      assertThat(publicMetrics.statusCode()).isEqualTo(404);
      assertThat(publicMetrics.body()).contains("server.management_port");
      assertThat(management.get("/health").statusCode()).isEqualTo(200);
      assertThat(s.http.get("/health").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void theManagementPortServesNoWebhooksAndNoAdmin() {
    try (TestService s =
        TestService.start(YAML, "mgmt-admin-token-0123456789", l -> l.withManagementPort(0))) {
      Http management = new Http(s.server.managementUri());

      HttpResponse<String> hook = management.post("/hooks/p", "{\"id\":\"m-2\"}");
      HttpResponse<String> admin =
          management.get("/admin/stats", "Authorization", "Bearer mgmt-admin-token-0123456789");

      assertThat(hook.statusCode()).isEqualTo(404);
      assertThat(hook.body()).startsWith("{\"error\":\"not_found\"");
      assertThat(admin.statusCode()).isEqualTo(404);
      assertThat(s.sinks.get("p").delivered()).isEmpty();
    }
  }

  @Test
  void withoutAManagementPortMetricsStayOnTheMainPort() {
    try (TestService s = TestService.start(YAML, null)) {
      assertThat(s.http.get("/metrics").statusCode()).isEqualTo(200);
      assertThat(s.server.managementPort()).isEqualTo(-1);
    }
  }
}
