package dev.idem.key;

import static dev.idem.key.KeyEncodingTest.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Fingerprint;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Issue 8 section 1: keys keep a JSON number's exact decimal value and a value's JSON type. Before,
 * {@code {"id":820982911946154508}} and {@code {"id":820982911946154509}} got one key (both went
 * through the same double), so the second order was answered "duplicate" and never delivered; and
 * {@code 123}, {@code "123"} and {@code 123.0} were one field key.
 */
class Issue8ExactNumbersTest {
  private static final KeyRule ID = KeyRule.field("source.id");
  private static final KeyRule DEFAULT = KeyRule.defaultKey();

  private static InboundEvent body(String json) {
    return InboundEvent.of(utf8(json), Map.of());
  }

  private static DedupKey field(String idJson) {
    return ID.derive(body("{\"id\":" + idJson + "}"));
  }

  @Test
  void shopifyIdsThatShareADoubleAreTwoKeys() {
    assertThat(field("820982911946154508")).isNotEqualTo(field("820982911946154509"));
    assertThat(DEFAULT.derive(body("{\"id\":820982911946154508}")))
        .isNotEqualTo(DEFAULT.derive(body("{\"id\":820982911946154509}")));
    assertThat(CanonicalJson.fingerprint(utf8("{\"id\":820982911946154508}")))
        .isNotEqualTo(CanonicalJson.fingerprint(utf8("{\"id\":820982911946154509}")));
    KeyRule composite = KeyRule.fields(List.of("shop", "id"));
    assertThat(composite.derive(body("{\"shop\":\"s\",\"id\":820982911946154508}")))
        .isNotEqualTo(composite.derive(body("{\"shop\":\"s\",\"id\":820982911946154509}")));
  }

  @Test
  void spellingsOfOneNumberAreOneKey() {
    List<String> ones = List.of("1", "1.0", "1e0", "10E-1", "0.1E+1", "1.000e00");
    for (String one : ones) {
      assertThat(field(one)).as(one).isEqualTo(field("1"));
      assertThat(DEFAULT.derive(body("{\"n\":" + one + "}")))
          .as(one)
          .isEqualTo(DEFAULT.derive(body("{\"n\":1}")));
      assertThat(CanonicalJson.fingerprint(utf8("[" + one + "]")))
          .isEqualTo(CanonicalJson.fingerprint(utf8("[1]")));
    }
  }

  @Test
  void aHundredDigitIntegerIsKeyedExactly() {
    String hundred = "9".repeat(100);
    String neighbour = "9".repeat(99) + "8";
    assertThat(field(hundred)).isNotEqualTo(field(neighbour)).isEqualTo(field(hundred + ".000"));
    assertThat(DEFAULT.derive(body("[" + hundred + "]")))
        .isNotEqualTo(DEFAULT.derive(body("[" + neighbour + "]")));
  }

  @Test
  void numbersOutsideTheRangeAreRefusedNeverCollapsed() {
    for (String number : List.of("1e400", "-1e400", "1e-400", "-1e-400", "1e309")) {
      assertThatThrownBy(() -> field(number))
          .as(number)
          .isInstanceOf(NumberOutOfRangeException.class)
          .hasMessageContaining("outside the range")
          .hasMessageContaining("send it as a JSON string");
      assertThatThrownBy(() -> DEFAULT.derive(body("{\"n\":" + number + "}")))
          .as(number)
          .isInstanceOf(NumberOutOfRangeException.class);
      assertThatThrownBy(() -> CanonicalJson.fingerprint(utf8("[" + number + "]")))
          .as(number)
          .isInstanceOf(NumberOutOfRangeException.class);
    }
    // A field rule reads the whole body, so a refused number anywhere in it is refused.
    assertThatThrownBy(() -> ID.derive(body("{\"id\":\"a\",\"other\":1e-400}")))
        .isInstanceOf(NumberOutOfRangeException.class);
  }

  @Test
  void valuesOfDifferentJsonTypesAreDifferentKeys() {
    List<List<String>> distinct =
        List.of(
            List.of("123", "\"123\""),
            List.of("true", "\"true\""),
            List.of("false", "\"false\""),
            List.of("{}", "\"{}\"", "[]", "\"[]\""),
            List.of("0", "\"0\""),
            List.of("[1]", "\"[1]\"", "1"),
            List.of("{\"a\":1}", "\"{\\\"a\\\":1}\""));
    for (List<String> values : distinct) {
      List<DedupKey> fieldKeys = new ArrayList<>();
      List<DedupKey> compositeKeys = new ArrayList<>();
      List<DedupKey> defaultKeys = new ArrayList<>();
      for (String v : values) {
        fieldKeys.add(field(v));
        compositeKeys.add(
            KeyRule.fields(List.of("a", "id")).derive(body("{\"a\":1,\"id\":" + v + "}")));
        defaultKeys.add(DEFAULT.derive(body("{\"id\":" + v + "}")));
      }
      assertThat(fieldKeys).as("field keys of %s", values).doesNotHaveDuplicates();
      assertThat(compositeKeys).as("composite keys of %s", values).doesNotHaveDuplicates();
      assertThat(defaultKeys).as("default keys of %s", values).doesNotHaveDuplicates();
    }
    assertThat(field("123")).isEqualTo(field("123.0"));
  }

  /**
   * Random decimal values, each spelled several ways, keyed by a field rule, by the default key and
   * by fingerprint. Values that are equal must share a key whatever the spelling; values that
   * differ (also by one unit in a 30th digit, or only beyond a double's precision) must not.
   * Neighbours of each value are added on purpose so that near-collisions are common.
   */
  @Test
  void distinctValuesNeverShareAKeyAndEqualValuesAlwaysDo() {
    long seed = new Random().nextLong();
    System.out.println("Issue8ExactNumbersTest seed: " + seed);
    Random random = new Random(seed);
    SplittableRandom spelling = new SplittableRandom(random.nextLong());
    Map<DedupKey, BigDecimal> byFieldKey = new HashMap<>();
    Map<DedupKey, BigDecimal> byDefaultKey = new HashMap<>();
    Map<Fingerprint, BigDecimal> byFingerprint = new HashMap<>();
    int values = 0;
    for (int i = 0; i < 4_000; i++) {
      BigDecimal base = JsonModel.randomDecimal(new SplittableRandom(random.nextLong()));
      for (BigDecimal v : neighbours(base, random)) {
        if (!ExactNumberOracle.inRange(v)) {
          continue;
        }
        values++;
        String first = JsonModel.spellNumber(v, spelling);
        String second = JsonModel.spellNumber(v, spelling);
        String what = "seed " + seed + ": " + first + " / " + second;
        DedupKey key = field(first);
        assertThat(field(second)).as(what).isEqualTo(key);
        assertThat(field("\"" + ExactNumberOracle.canonical(v) + "\"")).as(what).isNotEqualTo(key);
        record(byFieldKey, key, v, what);
        DedupKey defaultKey = DEFAULT.derive(body("{\"v\":" + first + ",\"t\":\"x\"}"));
        assertThat(DEFAULT.derive(body("{\"t\":\"x\",\"v\":" + second + "}")))
            .as(what)
            .isEqualTo(defaultKey);
        record(byDefaultKey, defaultKey, v, what);
        Fingerprint fingerprint = CanonicalJson.fingerprint(utf8("[" + first + "]"));
        assertThat(CanonicalJson.fingerprint(utf8("[" + second + "]")))
            .as(what)
            .isEqualTo(fingerprint);
        record(byFingerprint, fingerprint, v, what);
      }
    }
    assertThat(values).as("seed %d: values tried", seed).isGreaterThan(10_000);
    assertThat(byFieldKey.size())
        .as("seed %d: the generator must produce many distinct values", seed)
        .isGreaterThan(5_000);
  }

  private static <K> void record(Map<K, BigDecimal> seen, K key, BigDecimal v, String what) {
    BigDecimal previous = seen.putIfAbsent(key, v);
    if (previous != null) {
      assertThat(previous.compareTo(v)).as("%s: %s and %s share a key", what, previous, v).isZero();
    }
  }

  /** The value and values next to it: one unit in its last digit, far beyond it, its negation. */
  private static List<BigDecimal> neighbours(BigDecimal v, Random random) {
    BigDecimal unit = BigDecimal.ONE.scaleByPowerOfTen(-v.scale());
    int exponent = v.precision() - 1 - v.scale();
    BigDecimal tiny = BigDecimal.ONE.scaleByPowerOfTen(exponent - 17 - random.nextInt(20));
    return List.of(v, v.add(unit), v.subtract(unit), v.add(tiny), v.negate(), v.movePointRight(1));
  }
}
