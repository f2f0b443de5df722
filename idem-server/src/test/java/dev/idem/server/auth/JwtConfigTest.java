package dev.idem.server.auth;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.config.ConfigException;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.ConfigPrinter;
import dev.idem.server.config.IdemConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code source.webhook.auth.jwt}: defaults, and each mistake a located error saying the fix. */
class JwtConfigTest {
  static final String SECRET = "0123456789abcdef0123456789abcdef";

  private static String yaml(String jwt) {
    return """
        store: { type: memory }
        pipelines:
          - id: p
            source: { webhook: { path: /in, auth: { jwt: %s } } }
            dedup: {}
            deliver: { stdout: {} }
        """
        .formatted(jwt);
  }

  private static String problem(String jwt) {
    try {
      ConfigLoader.parse("idem.yaml", yaml(jwt), n -> null);
    } catch (ConfigException e) {
      assertThat(e.problems()).hasSize(1);
      return e.problems().get(0).toString();
    }
    throw new AssertionError("expected a ConfigException for " + jwt);
  }

  @Test
  void defaultsAreSixtySecondsOfLeewayAndFourDelegations() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml",
            yaml("{ jwks_url: \"https://idp.example/jwks.json\", algorithms: [RS256, ES256] }"),
            n -> null);

    JwtSettings jwt = c.pipelines().get(0).webhook().jwt();
    assertThat(jwt).isNotNull();
    assertThat(jwt.leeway()).isEqualTo(Duration.ofSeconds(60));
    assertThat(jwt.maxDelegationDepth()).isEqualTo(4);
  }

  @Test
  void theSecretIsMaskedWhenTheConfigIsPrinted() {
    IdemConfig c =
        ConfigLoader.parse(
            "idem.yaml", yaml("{ secret: \"" + SECRET + "\", algorithms: [HS256] }"), n -> null);

    String printed = ConfigPrinter.toYaml(c);

    assertThat(printed).doesNotContain(SECRET).contains("secret: '***'");
  }

  @Test
  void algNoneIsRefused() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\", algorithms: [none] }"))
        .contains("pipelines[0].source.webhook.auth.jwt")
        .contains("'none' is not allowed");
  }

  @Test
  void mixingHmacWithPublicKeyAlgorithmsIsRefused() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\", algorithms: [RS256, HS256] }"))
        .contains("mixes HS* with RS*/PS*/ES*");
  }

  @Test
  void aJwksUrlTakesNoHmacAndASecretTakesNoRsa() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\", algorithms: [HS256] }"))
        .contains("need a secret");
    assertThat(problem("{ secret: \"" + SECRET + "\", algorithms: [RS256] }"))
        .contains("a secret verifies HS256/384/512 only");
  }

  @Test
  void aSecretShorterThanRfc7518AllowsIsRefused() {
    assertThat(problem("{ secret: \"" + SECRET + "\", algorithms: [HS512] }"))
        .contains("shorter than 64 bytes");
  }

  @Test
  void algorithmsAreRequiredAndOneKeySourceExactly() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\" }")).contains("algorithms is required");
    assertThat(
            problem(
                "{ jwks_url: \"https://idp/jwks\", secret: \""
                    + SECRET
                    + "\", algorithms: [HS256] }"))
        .contains("exactly one of jwks_url, public_key and secret");
  }

  @Test
  void anEmptyAlgorithmEntryIsAProblemNotACrash() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\", algorithms: [RS256, ~] }"))
        .contains("algorithms has an empty entry");
  }

  @Test
  void plainHttpJwksIsForLoopbackOnly() {
    assertThat(problem("{ jwks_url: \"http://idp.example/jwks\", algorithms: [RS256] }"))
        .contains("plain http to another host");
  }

  @Test
  void leewayAndDepthAreBounded() {
    assertThat(problem("{ jwks_url: \"https://idp/jwks\", algorithms: [RS256], leeway: 1h }"))
        .contains("leeway");
    assertThat(
            problem(
                "{ jwks_url: \"https://idp/jwks\", algorithms: [RS256], max_delegation_depth: 99 }"))
        .contains("max_delegation_depth must be from 0 to 16");
  }

  @Test
  void aMissingPublicKeyFileSaysSo() {
    assertThat(problem("{ public_key: /nonexistent/issuer.pem, algorithms: [RS256] }"))
        .contains("public_key: cannot read /nonexistent/issuer.pem");
  }
}
