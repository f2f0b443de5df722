package dev.idem.server.signature;

import static dev.idem.server.signature.Requests.headers;
import static dev.idem.server.signature.Requests.hex;
import static dev.idem.server.signature.Requests.hmac;
import static dev.idem.server.signature.Requests.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ManualTimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class GitHubVerifierTest {
  private static final String SECRET = "gh-secret-42";
  private static final String BODY = "{\"action\":\"opened\",\"number\":42}";
  // openssl: printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET"
  private static final String SIGNATURE =
      "sha256=582f9bc95c456d26e3eb10b569f60164e0a1d9b57ea087cd72150b660b19ce69";

  private final SignatureVerifier verifier = verifier(SECRET);

  private static SignatureVerifier verifier(String secret) {
    return SignatureVerifiers.create(
        new SignatureSettings(SignatureScheme.GITHUB, secret, Duration.ofMinutes(5)),
        new ManualTimeSource());
  }

  @Test
  void acceptsGitHubsPublishedTestVector() {
    // From GitHub's "Validating webhook deliveries" page: secret "It's a Secret to Everybody",
    // payload "Hello, World!".
    SignatureVerifier github = verifier("It's a Secret to Everybody");
    String expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    assertThatCode(
            () -> github.verify(utf8("Hello, World!"), headers("X-Hub-Signature-256", expected)))
        .doesNotThrowAnyException();
  }

  @Test
  void acceptsThePinnedVector() {
    assertThat("sha256=" + hex(hmac(utf8(SECRET), BODY))).isEqualTo(SIGNATURE);
    assertThatCode(() -> verifier.verify(utf8(BODY), headers("x-hub-signature-256", SIGNATURE)))
        .doesNotThrowAnyException();
  }

  @Test
  void rejectsAWrongSecretAndATamperedBody() {
    assertThatThrownBy(
            () -> verifier("other").verify(utf8(BODY), headers("X-Hub-Signature-256", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID))
        .hasMessageNotContaining(SIGNATURE.substring(7));
    assertThatThrownBy(
            () -> verifier.verify(utf8(BODY + " "), headers("X-Hub-Signature-256", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsMissingAndMalformedHeaders() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers("X-Hub-Signature", "sha1=abc")))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("X-Hub-Signature-256");
    for (String bad :
        new String[] {
          SIGNATURE.substring(7), "sha1=" + SIGNATURE.substring(7), "sha256=abc", "sha256="
        }) {
      assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers("X-Hub-Signature-256", bad)))
          .as(bad)
          .isInstanceOfSatisfying(
              SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
          .hasMessageContaining("malformed");
    }
  }

  @Test
  void deliveryIdIsTheDeliveryHeader() {
    assertThat(
            verifier.deliveryId(
                utf8(BODY), headers("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")))
        .contains("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    assertThat(verifier.deliveryId(utf8(BODY), headers())).isEmpty();
    assertThat(verifier.deliveryId(utf8(BODY), headers("X-GitHub-Delivery", "  "))).isEmpty();
  }
}
