package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scope names: what is allowed, how they print and parse, and the messages for what is not. */
class ScopeTest {

  @Test
  void aPipelinesSingleStepIsNamedDedup() {
    Scope s = Scope.of("shop-orders");

    assertThat(s).isEqualTo(new Scope("shop-orders", Scope.DEFAULT_STEP));
    assertThat(s.step()).isEqualTo("dedup");
    assertThat(s).hasToString("shop-orders/dedup");
  }

  @Test
  void printsAndParsesAsPipelineSlashStep() {
    Scope s = Scope.of("billing.v2", "charge_1-a");

    assertThat(s.toString()).isEqualTo("billing.v2/charge_1-a");
    assertThat(Scope.parse(s.toString())).isEqualTo(s);
  }

  @Test
  void scopesAreValuesAndDistinctPartsMakeDistinctScopes() {
    assertThat(Scope.of("a", "b"))
        .isEqualTo(Scope.of("a", "b"))
        .hasSameHashCodeAs(Scope.of("a", "b"));
    assertThat(Scope.of("a.b", "c")).isNotEqualTo(Scope.of("a", "b.c"));
    assertThat(Scope.of("a.b", "c").toString()).isNotEqualTo(Scope.of("a", "b.c").toString());
  }

  @Test
  void partsOfOneAndSixtyFourCharactersAreAllowed() {
    String longest = "x".repeat(64);

    assertThat(Scope.of(longest, "y").pipeline()).hasSize(64);
    assertThat(Scope.of("p", longest).step()).hasSize(64);
    assertThat(Scope.of("p", "s")).isNotNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "has space", "slash/inside", "star*", "ünïcode", "colon:x"})
  void aPipelineOutsideTheAlphabetIsRejectedWithTheRule(String pipeline) {
    assertThatThrownBy(() -> Scope.of(pipeline, "dedup"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope pipeline '" + pipeline + "' is not allowed")
        .hasMessageContaining("1 to 64 characters of letters, digits, '_', '.' or '-'");
  }

  @Test
  void aStepThatIsTooLongOrEmptyIsRejectedNamingTheStep() {
    assertThatThrownBy(() -> Scope.of("p", "s".repeat(65)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope step '");
    assertThatThrownBy(() -> Scope.of("p", "")).hasMessageContaining("scope step ''");
    assertThatThrownBy(() -> Scope.of("p".repeat(65))).hasMessageContaining("scope pipeline");
  }

  @Test
  void nullPartsAreRejectedWithTheSameMessage() {
    assertThatThrownBy(() -> new Scope(null, "dedup"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope pipeline 'null' is not allowed");
    assertThatThrownBy(() -> new Scope("p", null))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope step 'null'");
  }

  @Test
  void parseRejectsTextWithoutASlashShowingTheForm() {
    assertThatThrownBy(() -> Scope.parse("shop-orders"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope 'shop-orders' is not of the form pipeline/step")
        .hasMessageContaining("shop-orders/dedup");
  }

  @Test
  void parseRejectsASecondSlashAsPartOfTheStep() {
    assertThatThrownBy(() -> Scope.parse("a/b/c"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scope step 'b/c'");
    assertThatThrownBy(() -> Scope.parse("/dedup")).hasMessageContaining("scope pipeline ''");
  }
}
