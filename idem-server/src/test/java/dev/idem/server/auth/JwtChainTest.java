package dev.idem.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.nimbusds.jwt.JWTClaimsSet;
import dev.idem.key.Principal;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The principal chain read from verified claims: order, issuer inheritance, depth, bad shapes. */
class JwtChainTest {

  @Test
  void theChainIsTheTokenThenEachActOutermostFirstAndAnActWithoutIssInheritsTheTokensIss() {
    JWTClaimsSet claims =
        new JWTClaimsSet.Builder()
            .issuer("https://idp")
            .subject("alice")
            .claim(
                "act",
                Map.of(
                    "sub", "gateway", "act", Map.of("iss", "https://partner", "sub", "batch-job")))
            .build();

    assertThat(JwtCallers.chain(claims, 4))
        .containsExactly(
            new Principal("https://idp", "alice"),
            new Principal("https://idp", "gateway"),
            new Principal("https://partner", "batch-job"));
  }

  @Test
  void aTokenWithoutIssHasAnEmptyIssuer() {
    JWTClaimsSet claims = new JWTClaimsSet.Builder().subject("alice").build();

    assertThat(JwtCallers.chain(claims, 0)).containsExactly(new Principal("", "alice"));
  }

  @Test
  void oneActMoreThanTheDepthIsDelegationTooDeep() {
    JWTClaimsSet claims =
        new JWTClaimsSet.Builder().subject("alice").claim("act", Map.of("sub", "svc")).build();

    assertThat(JwtCallers.chain(claims, 1)).hasSize(2);
    assertThatThrownBy(() -> JwtCallers.chain(claims, 0))
        .isInstanceOfSatisfying(
            CallerException.class,
            e -> assertThat(e.reason()).isEqualTo(CallerException.Reason.DELEGATION_TOO_DEEP));
  }

  @Test
  void anActWithoutSubOrNotAnObjectIsAnInvalidToken() {
    JWTClaimsSet noSub =
        new JWTClaimsSet.Builder().subject("alice").claim("act", Map.of("iss", "x")).build();
    JWTClaimsSet notObject =
        new JWTClaimsSet.Builder().subject("alice").claim("act", "svc").build();
    JWTClaimsSet blankSub = new JWTClaimsSet.Builder().subject(" ").build();

    for (JWTClaimsSet c : new JWTClaimsSet[] {noSub, notObject, blankSub}) {
      assertThatThrownBy(() -> JwtCallers.chain(c, 4))
          .isInstanceOfSatisfying(
              CallerException.class,
              e -> assertThat(e.reason()).isEqualTo(CallerException.Reason.INVALID_TOKEN));
    }
  }
}
