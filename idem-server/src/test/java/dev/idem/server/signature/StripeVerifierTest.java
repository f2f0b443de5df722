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
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class StripeVerifierTest {
  private static final String SECRET = "whsec_9f8a7b6c5d4e3f2a1b0c";
  private static final String BODY =
      "{\"id\":\"evt_1NG8Du2eZvKYlo2CUI79vXWy\",\"object\":\"event\",\"type\":\"payment_intent.succeeded\"}";
  private static final long T = 1_700_000_000L;
  // openssl: printf '%s' "1700000000.$BODY" | openssl dgst -sha256 -hmac "$SECRET"
  private static final String V1 =
      "554c6c07c6d2adfd17282ea16e7933d98c7664829dfe5b5dd7f526ba3de78356";

  private final ManualTimeSource clock = new ManualTimeSource(Instant.ofEpochSecond(T + 10));
  private final SignatureVerifier verifier =
      SignatureVerifiers.create(
          new SignatureSettings(SignatureScheme.STRIPE, SECRET, Duration.ofMinutes(5)), clock);

  @Test
  void acceptsThePinnedVector() {
    assertThat(verifier.scheme()).isEqualTo(SignatureScheme.STRIPE);
    assertThatCode(
            () -> verifier.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + V1)))
        .doesNotThrowAnyException();
  }

  @Test
  void pinnedVectorIsWhatStripeDocumentsHmacOfTimestampDotBody() {
    assertThat(hex(hmac(utf8(SECRET), T + "." + BODY))).isEqualTo(V1);
  }

  @Test
  void headerNameIsCaseInsensitiveAndV0AndSpacesAreIgnored() {
    String header = "t=" + T + ", v1=" + V1.toUpperCase() + ", v0=deadbeef";
    assertThatCode(() -> verifier.verify(utf8(BODY), headers("stripe-signature", header)))
        .doesNotThrowAnyException();
  }

  @Test
  void acceptsAnyV1DuringSecretRotation() {
    // Given Stripe signs with the old and the new secret while a secret rolls
    String old = hex(hmac(utf8("whsec_old_secret_rolled"), T + "." + BODY));
    assertThat(old).isEqualTo("486a7f168329225768eff79d6b94cbcb7accdbb86fc2e753322d70b73f901174");

    // Then either order verifies with the current secret
    assertThatCode(
            () ->
                verifier.verify(
                    utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + old + ",v1=" + V1)))
        .doesNotThrowAnyException();
    assertThatCode(
            () ->
                verifier.verify(
                    utf8(BODY), headers("Stripe-Signature", "v1=" + V1 + ",v1=" + old + ",t=" + T)))
        .doesNotThrowAnyException();
  }

  @Test
  void rejectsAWrongSecret() {
    SignatureVerifier other =
        SignatureVerifiers.create(
            new SignatureSettings(SignatureScheme.STRIPE, "whsec_other", Duration.ofMinutes(5)),
            clock);

    assertThatThrownBy(
            () -> other.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + V1)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID))
        .hasMessageContaining("Stripe-Signature")
        .hasMessageNotContaining("whsec_other")
        .hasMessageNotContaining(V1);
  }

  @Test
  void rejectsATamperedBody() {
    String tampered = BODY.replace("succeeded", "failed");
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(tampered), headers("Stripe-Signature", "t=" + T + ",v1=" + V1)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsAChangedTimestampBecauseItIsSigned() {
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY), headers("Stripe-Signature", "t=" + (T + 1) + ",v1=" + V1)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsAMissingHeader() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers()))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("Stripe-Signature header is missing");
  }

  @Test
  void rejectsMalformedHeaders() {
    for (String header :
        new String[] {
          "v1=" + V1, // no timestamp
          "t=" + T, // no signature
          "t=abc,v1=" + V1, // timestamp not a number
          "t=-5,v1=" + V1,
          "t=" + T + ",t=" + T + ",v1=" + V1, // two timestamps
          "garbage",
        }) {
      assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers("Stripe-Signature", header)))
          .as(header)
          .isInstanceOfSatisfying(
              SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
          .hasMessageContaining("malformed");
    }
  }

  @Test
  void aSignatureThatIsNotHexIsInvalidNotAnError() {
    assertThatThrownBy(
            () -> verifier.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=zz")))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsATimestampOutsideTheToleranceInBothDirections() {
    // Given a correctly signed request
    String header = "t=" + T + ",v1=" + V1;

    // When the clock is 5 minutes after t: still accepted (the bound is inclusive)
    ManualTimeSource at =
        new ManualTimeSource(Instant.ofEpochSecond(T).plus(Duration.ofMinutes(5)));
    assertThatCode(() -> verifierAt(at).verify(utf8(BODY), headers("Stripe-Signature", header)))
        .doesNotThrowAnyException();

    // When it is one second later: stale (a replay)
    at.advance(Duration.ofSeconds(1));
    assertThatThrownBy(() -> verifierAt(at).verify(utf8(BODY), headers("Stripe-Signature", header)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.STALE))
        .hasMessageContaining("301s in the past")
        .hasMessageContaining("tolerance of 300s");

    // When the clock is 5 minutes and 1 second before t: stale too (a timestamp in the future)
    ManualTimeSource early =
        new ManualTimeSource(Instant.ofEpochSecond(T).minus(Duration.ofSeconds(301)));
    assertThatThrownBy(
            () -> verifierAt(early).verify(utf8(BODY), headers("Stripe-Signature", header)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.STALE))
        .hasMessageContaining("in the future");
  }

  @Test
  void aStaleButForgedRequestIsInvalidNotStale() {
    ManualTimeSource late = new ManualTimeSource(Instant.ofEpochSecond(T + 3600));
    assertThatThrownBy(
            () ->
                verifierAt(late)
                    .verify(
                        utf8(BODY),
                        headers("Stripe-Signature", "t=" + T + ",v1=" + "0".repeat(64))))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void deliveryIdIsTheEventsTopLevelId() {
    assertThat(verifier.deliveryId(utf8(BODY), headers())).contains("evt_1NG8Du2eZvKYlo2CUI79vXWy");
    assertThat(
            verifier.deliveryId(
                utf8("{\"data\":{\"object\":{\"id\":\"pi_1\"}},\"id\":\"evt_2\"}"), headers()))
        .contains("evt_2");
    assertThat(verifier.deliveryId(utf8("{\"data\":{\"id\":\"pi_1\"}}"), headers())).isEmpty();
    assertThat(verifier.deliveryId(utf8("{\"id\":42}"), headers())).isEmpty();
    assertThat(verifier.deliveryId(utf8("[1,2]"), headers())).isEmpty();
    assertThat(verifier.deliveryId(utf8("not json"), headers())).isEmpty();
  }

  private static SignatureVerifier verifierAt(ManualTimeSource clock) {
    return SignatureVerifiers.create(
        new SignatureSettings(SignatureScheme.STRIPE, SECRET, Duration.ofMinutes(5)), clock);
  }

  @Test
  void withTwoConfiguredSecretsARequestSignedWithEitherVerifies() {
    // Given Idem holds the new and the old secret while a roll is under way
    SignatureVerifier rolling =
        SignatureVerifiers.create(
            new SignatureSettings(
                SignatureScheme.STRIPE,
                List.of("whsec_old_secret_rolled", SECRET),
                Duration.ofMinutes(5)),
            clock);
    String old = hex(hmac(utf8("whsec_old_secret_rolled"), T + "." + BODY));

    // Then a request signed with only one of them verifies, and one signed with neither does not
    assertThatCode(
            () -> rolling.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + V1)))
        .doesNotThrowAnyException();
    assertThatCode(
            () -> rolling.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + old)))
        .doesNotThrowAnyException();
    String other = hex(hmac(utf8("whsec_neither"), T + "." + BODY));
    assertThatThrownBy(
            () ->
                rolling.verify(utf8(BODY), headers("Stripe-Signature", "t=" + T + ",v1=" + other)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }
}
