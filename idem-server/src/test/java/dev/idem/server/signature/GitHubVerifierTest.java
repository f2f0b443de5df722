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
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
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

  // A webhook whose content type is application/x-www-form-urlencoded: GitHub signs the form body
  // as sent, payload=<url-encoded JSON>.
  private static final String FORM = "payload=" + URLEncoder.encode(BODY, StandardCharsets.UTF_8);
  private static final String FORM_SIGNATURE = "sha256=" + hex(hmac(utf8(SECRET), FORM));

  @Test
  void aFormDeliveryIsVerifiedOverTheRawFormAndItsEventIsThePayload() {
    byte[] event =
        verifier.verifiedBody(
            utf8(FORM),
            headers(
                "Content-Type",
                "application/x-www-form-urlencoded",
                "X-Hub-Signature-256",
                FORM_SIGNATURE));

    assertThat(new String(event, StandardCharsets.UTF_8)).isEqualTo(BODY);
  }

  @Test
  void aFormDeliveryIsNotVerifiedOverItsDecodedPayload() {
    // The signature of the JSON alone does not authenticate a form body
    assertThatThrownBy(
            () ->
                verifier.verifiedBody(
                    utf8(FORM),
                    headers(
                        "Content-Type",
                        "application/x-www-form-urlencoded",
                        "X-Hub-Signature-256",
                        SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void theFormsOtherFieldsParametersAndPlusSignsAreHandled() {
    String json = "{\"title\":\"a b+c & d\"}";
    String form = "other=1&payload=" + URLEncoder.encode(json, StandardCharsets.UTF_8) + "&x";
    String sig = "sha256=" + hex(hmac(utf8(SECRET), form));

    byte[] event =
        verifier.verifiedBody(
            utf8(form),
            headers(
                "content-type",
                "Application/X-WWW-Form-Urlencoded; charset=utf-8",
                "X-Hub-Signature-256",
                sig));

    assertThat(new String(event, StandardCharsets.UTF_8)).isEqualTo(json);
  }

  @Test
  void aSignedFormWithoutExactlyOnePayloadIsRejectedSayingWhatGitHubSends() {
    for (String form :
        new String[] {"action=opened", "payload=%7B%7D&payload=%7B%7D", "payload=%7", ""}) {
      String sig = "sha256=" + hex(hmac(utf8(SECRET), form));
      assertThatThrownBy(
              () ->
                  verifier.verifiedBody(
                      utf8(form),
                      headers(
                          "Content-Type",
                          "application/x-www-form-urlencoded",
                          "X-Hub-Signature-256",
                          sig)))
          .as(form)
          .isInstanceOfSatisfying(
              SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
          .hasMessageContaining("payload=<json>");
    }
  }

  @Test
  void aJsonDeliveryIsItsOwnEvent() {
    byte[] raw = utf8(BODY);
    assertThat(
            verifier.verifiedBody(
                raw, headers("Content-Type", "application/json", "X-Hub-Signature-256", SIGNATURE)))
        .isSameAs(raw);
  }

  @Test
  void duringARollEitherSecretVerifies() {
    SignatureVerifier rolling =
        SignatureVerifiers.create(
            new SignatureSettings(
                SignatureScheme.GITHUB, List.of("gh-new-secret", SECRET), Duration.ofMinutes(5)),
            new ManualTimeSource());
    String signedWithNew = "sha256=" + hex(hmac(utf8("gh-new-secret"), BODY));

    assertThatCode(() -> rolling.verify(utf8(BODY), headers("X-Hub-Signature-256", SIGNATURE)))
        .doesNotThrowAnyException();
    assertThatCode(() -> rolling.verify(utf8(BODY), headers("X-Hub-Signature-256", signedWithNew)))
        .doesNotThrowAnyException();
    assertThatThrownBy(
            () -> verifier.verify(utf8(BODY), headers("X-Hub-Signature-256", signedWithNew)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }
}
