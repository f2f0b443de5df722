package dev.idem.server.signature;

import static dev.idem.server.signature.Requests.base64;
import static dev.idem.server.signature.Requests.headers;
import static dev.idem.server.signature.Requests.hmac;
import static dev.idem.server.signature.Requests.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import dev.idem.ManualTimeSource;
import dev.idem.server.signature.SignatureException.Reason;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class StandardWebhooksVerifierTest {
  // The specification's own vector (standard-webhooks libraries' TestWebhookSign).
  private static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  private static final String ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  private static final long TIMESTAMP = 1_614_265_330L;
  private static final String BODY = "{\"test\": 2432232314}";
  private static final String SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

  private final ManualTimeSource clock =
      new ManualTimeSource(Instant.ofEpochSecond(TIMESTAMP + 30));
  private final SignatureVerifier verifier = verifier(SECRET, clock);

  private static SignatureVerifier verifier(String secret, ManualTimeSource clock) {
    return SignatureVerifiers.create(
        new SignatureSettings(SignatureScheme.STANDARD, secret, Duration.ofMinutes(5)), clock);
  }

  private static Function<String, String> request(long timestamp, String signature) {
    return headers(
        "webhook-id",
        ID,
        "webhook-timestamp",
        Long.toString(timestamp),
        "webhook-signature",
        signature);
  }

  @Test
  void acceptsTheSpecificationsVector() {
    assertThatCode(() -> verifier.verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .doesNotThrowAnyException();
  }

  @Test
  void theVectorIsHmacOfIdDotTimestampDotBodyWithTheDecodedSecret() {
    byte[] key = Base64.getDecoder().decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    assertThat("v1," + base64(hmac(key, ID + "." + TIMESTAMP + "." + BODY))).isEqualTo(SIGNATURE);
  }

  @Test
  void aSecretWithoutThePrefixIsBase64Too() {
    assertThatCode(
            () ->
                verifier("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", clock)
                    .verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .doesNotThrowAnyException();
  }

  @Test
  void aSecretThatIsNotBase64IsAConfigError() {
    assertThatThrownBy(() -> verifier("whsec_not base64!", clock))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("whsec_")
        .hasMessageNotContaining("not base64!");
  }

  @Test
  void acceptsAnyV1AmongSeveralAndIgnoresOtherVersions() {
    // As in the specification's "valid multi sig" case
    String header =
        String.join(
            " ",
            "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
            "v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
            SIGNATURE,
            "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=");
    assertThatCode(() -> verifier.verify(utf8(BODY), request(TIMESTAMP, header)))
        .doesNotThrowAnyException();
  }

  @Test
  void rejectsAWrongSignatureSecretOrBody() {
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY),
                    request(TIMESTAMP, "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
    String otherSecret = "whsec_" + base64("another-24-byte-secret!!".getBytes());
    assertThatThrownBy(
            () -> verifier(otherSecret, clock).verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID))
        .hasMessageNotContaining(otherSecret)
        .hasMessageNotContaining(SIGNATURE.substring(3));
    assertThatThrownBy(
            () -> verifier.verify(utf8("{\"test\": 2432232315}"), request(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void theIdAndTimestampAreSigned() {
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY),
                    headers(
                        "webhook-id",
                        "msg_other",
                        "webhook-timestamp",
                        Long.toString(TIMESTAMP),
                        "webhook-signature",
                        SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), request(TIMESTAMP + 1, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsEachMissingHeader() {
    String ts = Long.toString(TIMESTAMP);
    for (Function<String, String> h :
        java.util.List.of(
            headers("webhook-timestamp", ts, "webhook-signature", SIGNATURE),
            headers("webhook-id", ID, "webhook-signature", SIGNATURE),
            headers("webhook-id", ID, "webhook-timestamp", ts))) {
      assertThatThrownBy(() -> verifier.verify(utf8(BODY), h))
          .isInstanceOfSatisfying(
              SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
          .hasMessageContaining("header is missing");
    }
  }

  @Test
  void rejectsMalformedHeaders() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), request(TIMESTAMP, "g0hM9SsE")))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING));
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY),
                    headers(
                        "webhook-id",
                        ID,
                        "webhook-timestamp",
                        "soon",
                        "webhook-signature",
                        SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("webhook-timestamp");
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY),
                    headers(
                        "webhook-id",
                        "msg.1",
                        "webhook-timestamp",
                        Long.toString(TIMESTAMP),
                        "webhook-signature",
                        SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("'.'");
  }

  @Test
  void rejectsATimestampOutsideTheToleranceInBothDirections() {
    ManualTimeSource late = new ManualTimeSource(Instant.ofEpochSecond(TIMESTAMP + 301));
    assertThatThrownBy(
            () -> verifier(SECRET, late).verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.STALE))
        .hasMessageContaining("in the past");

    ManualTimeSource early = new ManualTimeSource(Instant.ofEpochSecond(TIMESTAMP - 301));
    assertThatThrownBy(
            () -> verifier(SECRET, early).verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.STALE))
        .hasMessageContaining("in the future");

    ManualTimeSource edge = new ManualTimeSource(Instant.ofEpochSecond(TIMESTAMP + 300));
    assertThatCode(() -> verifier(SECRET, edge).verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .doesNotThrowAnyException();
  }

  @Test
  void deliveryIdIsTheWebhookId() {
    assertThat(verifier.deliveryId(utf8(BODY), request(TIMESTAMP, SIGNATURE))).contains(ID);
    assertThat(verifier.deliveryId(utf8(BODY), headers())).isEmpty();
  }

  // Svix sends the Standard Webhooks scheme under its own header names by default; Svix's
  // libraries check the same vector as the specification's.
  private static Function<String, String> svixRequest(long timestamp, String signature) {
    return headers(
        "svix-id", ID, "svix-timestamp", Long.toString(timestamp), "svix-signature", signature);
  }

  @Test
  void acceptsSvixsDefaultHeaderFamilyWithTheSameVector() {
    assertThatCode(() -> verifier.verify(utf8(BODY), svixRequest(TIMESTAMP, SIGNATURE)))
        .doesNotThrowAnyException();
    assertThat(verifier.deliveryId(utf8(BODY), svixRequest(TIMESTAMP, SIGNATURE))).contains(ID);
  }

  @Test
  void svixHeadersAreCheckedAsStrictlyAsTheStandardOnes() {
    // A tampered body, a stale timestamp and a missing header fail as with webhook-*
    assertThatThrownBy(() -> verifier.verify(utf8(BODY + " "), svixRequest(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID))
        .hasMessageContaining("svix-signature");
    ManualTimeSource late = new ManualTimeSource(Instant.ofEpochSecond(TIMESTAMP + 301));
    assertThatThrownBy(
            () -> verifier(SECRET, late).verify(utf8(BODY), svixRequest(TIMESTAMP, SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.STALE))
        .hasMessageContaining("svix-timestamp");
    assertThatThrownBy(
            () -> verifier.verify(utf8(BODY), headers("svix-id", ID, "svix-signature", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("svix-timestamp header is missing");
  }

  @Test
  void aRequestWithNeitherFamilyNamesBoth() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers()))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("webhook-id header is missing")
        .hasMessageContaining("svix-id");
  }

  @Test
  void theWebhookFamilyWinsWhenBothAreSentAndHeadersAreNeverMixed() {
    // Given valid webhook-* headers and svix-* headers of another delivery
    Function<String, String> both =
        headers(
            "webhook-id",
            ID,
            "webhook-timestamp",
            Long.toString(TIMESTAMP),
            "webhook-signature",
            SIGNATURE,
            "svix-id",
            "msg_other",
            "svix-timestamp",
            "1",
            "svix-signature",
            "v1,AAAA");

    // Then the request verifies, and its key is the webhook-id
    assertThatCode(() -> verifier.verify(utf8(BODY), both)).doesNotThrowAnyException();
    assertThat(verifier.deliveryId(utf8(BODY), both)).contains(ID);

    // And a webhook-id with only svix-* signature headers is not verified with them
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY),
                    headers(
                        "webhook-id", ID,
                        "svix-timestamp", Long.toString(TIMESTAMP),
                        "svix-signature", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("webhook-timestamp header is missing");
  }

  @Test
  void duringARollEitherSecretVerifies() {
    String fresh = "whsec_" + base64("a-new-standard-webhooks-key-32b!".getBytes());
    SignatureVerifier rolling =
        SignatureVerifiers.create(
            new SignatureSettings(
                SignatureScheme.STANDARD, List.of(fresh, SECRET), Duration.ofMinutes(5)),
            clock);
    String signedWithNew =
        "v1,"
            + base64(
                hmac(
                    Base64.getDecoder().decode(fresh.substring(6)),
                    ID + "." + TIMESTAMP + "." + BODY));

    assertThatCode(() -> rolling.verify(utf8(BODY), request(TIMESTAMP, SIGNATURE)))
        .doesNotThrowAnyException();
    assertThatCode(() -> rolling.verify(utf8(BODY), request(TIMESTAMP, signedWithNew)))
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), request(TIMESTAMP, signedWithNew)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void everySecretIsCheckedWhenTheSettingsAreMade() {
    // The check happens in the settings, so check-config reports it, not the first request
    assertThatThrownBy(
            () ->
                new SignatureSettings(
                    SignatureScheme.STANDARD,
                    List.of(SECRET, "whsec_not base64!"),
                    Duration.ofMinutes(5)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("not base64")
        .hasMessageNotContaining("not base64!");
  }
}
