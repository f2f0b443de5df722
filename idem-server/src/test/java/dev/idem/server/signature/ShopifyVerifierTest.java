package dev.idem.server.signature;

import static dev.idem.server.signature.Requests.base64;
import static dev.idem.server.signature.Requests.headers;
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
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ShopifyVerifierTest {
  private static final String SECRET = "shpss_5e8d1a0b9c7f";
  private static final String BODY =
      "{\"id\":820982911946154508,\"email\":\"jon@example.com\",\"total_price\":\"29.99\"}";
  // openssl: printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET" -binary | base64
  private static final String SIGNATURE = "oLB7Mf1r1D7QLCeaiRpf866Bu7KcLQt0naMWvfhsYQ4=";

  private final ManualTimeSource clock = new ManualTimeSource();
  private final SignatureVerifier verifier = verifier(SECRET);

  private SignatureVerifier verifier(String secret) {
    return SignatureVerifiers.create(
        new SignatureSettings(SignatureScheme.SHOPIFY, secret, Duration.ofMinutes(5)), clock);
  }

  @Test
  void acceptsThePinnedVector() {
    assertThat(base64(hmac(utf8(SECRET), BODY))).isEqualTo(SIGNATURE);
    assertThatCode(() -> verifier.verify(utf8(BODY), headers("x-shopify-hmac-sha256", SIGNATURE)))
        .doesNotThrowAnyException();
  }

  @Test
  void rejectsAWrongSecretAndATamperedBody() {
    assertThatThrownBy(
            () -> verifier("other").verify(utf8(BODY), headers("X-Shopify-Hmac-Sha256", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID))
        .hasMessageNotContaining(SIGNATURE);
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY.replace("29.99", "0.01")),
                    headers("X-Shopify-Hmac-Sha256", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void rejectsMissingAndMalformedHeaders() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers()))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING))
        .hasMessageContaining("X-Shopify-Hmac-Sha256");
    for (String bad :
        new String[] {
          "not base64!", "c2hvcnQ=", "oLB7Mf1r1D7QLCeaiRpf866Bu7KcLQt0naMWvfhsYQ4=AAAA"
        }) {
      assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers("X-Shopify-Hmac-Sha256", bad)))
          .as(bad)
          .isInstanceOfSatisfying(
              SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.MISSING));
    }
  }

  @Test
  void doesNotEnforceTheUnsignedTriggeredAtHeader() {
    // Shopify retries a delivery for hours with its original trigger time; the header is not
    // signed, so checking it would reject those retries and stop no attacker.
    clock.advance(Duration.ofHours(3));
    assertThatCode(
            () ->
                verifier.verify(
                    utf8(BODY),
                    headers(
                        "X-Shopify-Hmac-Sha256",
                        SIGNATURE,
                        "X-Shopify-Triggered-At",
                        Instant.parse("2026-01-01T00:00:00Z").toString())))
        .doesNotThrowAnyException();
  }

  @Test
  void deliveryIdIsTheWebhookIdWithoutFallingBackToTheEventId() {
    assertThat(
            verifier.deliveryId(
                utf8(BODY),
                headers(
                    "X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
                    "X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5")))
        .contains("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    assertThat(
            verifier.deliveryId(
                utf8(BODY), headers("X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5")))
        .isEmpty();
  }

  @Test
  void acceptsTheUnprefixedHeadersShopifysLibrariesAccept() {
    Function<String, String> unprefixed =
        headers(
            "shopify-hmac-sha256",
            SIGNATURE,
            "shopify-webhook-id",
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");

    assertThatCode(() -> verifier.verify(utf8(BODY), unprefixed)).doesNotThrowAnyException();
    assertThat(verifier.deliveryId(utf8(BODY), unprefixed))
        .contains("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    assertThatThrownBy(
            () ->
                verifier.verify(
                    utf8(BODY.replace("29.99", "0.01")), headers("shopify-hmac-sha256", SIGNATURE)))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }

  @Test
  void theMissingHeaderMessageNamesBothSpellings() {
    assertThatThrownBy(() -> verifier.verify(utf8(BODY), headers()))
        .hasMessageContaining("X-Shopify-Hmac-Sha256")
        .hasMessageContaining("Shopify-Hmac-Sha256) is missing");
  }

  @Test
  void theXPrefixedWebhookIdWinsWhenBothAreSent() {
    assertThat(
            verifier.deliveryId(
                utf8(BODY),
                headers("X-Shopify-Webhook-Id", "w-x", "shopify-webhook-id", "w-plain")))
        .contains("w-x");
  }

  @Test
  void duringARollEitherSecretVerifies() {
    SignatureVerifier rolling =
        SignatureVerifiers.create(
            new SignatureSettings(
                SignatureScheme.SHOPIFY, List.of("shpss_new_one", SECRET), Duration.ofMinutes(5)),
            clock);
    String signedWithNew = base64(hmac(utf8("shpss_new_one"), BODY));

    assertThatCode(() -> rolling.verify(utf8(BODY), headers("X-Shopify-Hmac-Sha256", SIGNATURE)))
        .doesNotThrowAnyException();
    assertThatCode(
            () -> rolling.verify(utf8(BODY), headers("X-Shopify-Hmac-Sha256", signedWithNew)))
        .doesNotThrowAnyException();
    assertThatThrownBy(
            () ->
                rolling.verify(
                    utf8(BODY), headers("X-Shopify-Hmac-Sha256", base64(hmac(utf8("x"), BODY)))))
        .isInstanceOfSatisfying(
            SignatureException.class, e -> assertThat(e.reason()).isEqualTo(Reason.INVALID));
  }
}
