package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.server.deliver.HttpSinkSettings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 8, section 5: a {@code user:pw@} in {@code deliver.http.url} is honoured (as HTTP Basic,
 * see HttpSinkTest for the wire) or refused when the config is loaded, never accepted and dropped.
 */
class SinkUserInfoConfigTest {

  private static String yaml(String url, String headers) {
    return """
        store: { type: memory }
        pipelines:
          - id: p
            source: { webhook: { path: /p } }
            deliver:
              http:
                url: "%s"
        %s
        """
        .formatted(url, headers);
  }

  @Test
  void userAndPasswordLoadAndBecomeTheSinksBasicAuthorization() {
    IdemConfig config =
        ConfigLoader.parse("idem.yaml", yaml("https://alice:s3cret@h.example/hook", ""), n -> null);

    SinkSettings.Http http = (SinkSettings.Http) config.pipelines().get(0).deliver().sink();
    HttpSinkSettings sink = new HttpSinkSettings(http.url(), http.headers(), http.timeout());
    assertThat(sink.url().toString()).isEqualTo("https://h.example/hook");
    assertThat(sink.headers()).containsEntry("Authorization", "Basic YWxpY2U6czNjcmV0");
    assertThat(http.toString()).doesNotContain("s3cret");
  }

  @Test
  void userInfoNextToAnAuthorizationHeaderIsRefusedAtLoadNamingTheField() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class,
            () ->
                ConfigLoader.parse(
                    "idem.yaml",
                    yaml(
                        "https://alice:s3cret@h.example/hook",
                        "        headers: { Authorization: \"Bearer t\" }"),
                    Map.<String, String>of()::get));

    assertThat(e.getMessage())
        .startsWith("idem.yaml:")
        .contains("pipelines[0].deliver.http.url")
        .contains("keep one")
        .doesNotContain("s3cret");
  }

  @Test
  void aUserWithoutAPasswordIsRefusedAtLoad() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class,
            () ->
                ConfigLoader.parse(
                    "idem.yaml", yaml("https://alice@h.example/hook", ""), n -> null));

    assertThat(e.getMessage())
        .contains("pipelines[0].deliver.http.url")
        .contains("no password")
        .doesNotContain("alice");
  }
}
