package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The listener limits and the management port in {@code server}: defaults, values, errors. */
class ServerLimitsConfigTest {
  static final String PIPELINE =
      """
      pipelines:
        - id: p
          source: { webhook: { path: /in } }
          deliver: { stdout: {} }
      """;

  static IdemConfig parse(String server) {
    return ConfigLoader.parse("idem.yaml", server + PIPELINE, name -> null);
  }

  static ConfigException failure(String server) {
    try {
      parse(server);
    } catch (ConfigException e) {
      return e;
    }
    throw new AssertionError("expected a ConfigException for:\n" + server);
  }

  @Test
  void omittedLimitsAreTheDocumentedDefaults() {
    ServerSettings s = parse("server: { port: 8080 }\n").server();

    assertThat(s.limits()).isEqualTo(HttpLimits.defaults());
    assertThat(s.limits().readTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.limits().minDataRate()).isEqualTo(1024);
    assertThat(s.limits().idleTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.limits().maxHeaderSize()).isEqualTo(8192);
    assertThat(s.managementPort()).isNull();
  }

  @Test
  void everyLimitAndTheManagementPortAreRead() {
    ServerSettings s =
        parse(
                """
                server:
                  read_timeout: 5s
                  min_data_rate: 4KiB
                  idle_timeout: 10s
                  max_header_size: 16KiB
                  management_port: 9090
                """)
            .server();

    assertThat(s.limits())
        .isEqualTo(new HttpLimits(Duration.ofSeconds(5), 4096, Duration.ofSeconds(10), 16384));
    assertThat(s.managementPort()).isEqualTo(9090);
  }

  @Test
  void aBadValueIsReportedAtItsLineWithWhatIsAllowed() {
    ConfigException e =
        failure(
            """
            server:
              port: 8080
              read_timeout: 10ms
              min_data_rate: fast
              max_header_size: 100
              management_port: 8080
            """);

    assertThat(e.problems())
        .map(Object::toString)
        .anySatisfy(
            p ->
                assertThat(p)
                    .startsWith("idem.yaml:3:")
                    .contains("server.read_timeout: read_timeout must be from 100ms to 1h"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .startsWith("idem.yaml:4:")
                    .contains("server.min_data_rate: 'fast' is not a size"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .startsWith("idem.yaml:5:")
                    .contains("server.max_header_size: max_header_size must be from 1KiB to 1MiB"))
        .anySatisfy(
            p ->
                assertThat(p)
                    .startsWith("idem.yaml:6:")
                    .contains(
                        "server.management_port: management_port must be from 0 to 65535 and"
                            + " differ"));
  }

  @Test
  void theEffectiveConfigPrintsTheLimits() {
    String yaml = ConfigPrinter.toYaml(parse("server: { management_port: 9090 }\n"));

    assertThat(yaml)
        .contains("read_timeout: 30s")
        .contains("min_data_rate: 1KiB")
        .contains("idle_timeout: 30s")
        .contains("max_header_size: 8KiB")
        .contains("management_port: 9090");
  }
}
