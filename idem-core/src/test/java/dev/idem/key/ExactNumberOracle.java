package dev.idem.key;

import java.math.BigDecimal;

/**
 * The canonical number form for tests, from its definition and with BigDecimal only (nothing from
 * the code under test): the exact value with trailing zeros stripped, its significant digits laid
 * out as ECMAScript lays out digits; refused if a non-zero value's decimal exponent is outside
 * [-324, 308].
 */
final class ExactNumberOracle {
  /** Numbers at and near the edges of the range, all inside it. */
  static final String[] EDGES = {
    "1e308",
    "9.999999999999999999999e308",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1e-324",
    "-1e-324",
    "4.9e-324",
    "4.940656458412465441765687928682213723651e-324",
    "2.2250738585072014e-308",
    "1e21",
    "999999999999999999999",
    "1e-7",
    "0.000001",
    "9007199254740993",
    "18446744073709551615",
    "-9223372036854775808",
  };

  private ExactNumberOracle() {}

  /** Whether the value is inside the range keys keep exactly. */
  static boolean inRange(BigDecimal d) {
    if (d.signum() == 0) {
      return true;
    }
    int e = exponent(d.stripTrailingZeros());
    return e >= -324 && e <= 308;
  }

  /**
   * Returns the canonical form of a value inside the range.
   *
   * @throws IllegalArgumentException if the value is out of range
   */
  static String canonical(BigDecimal d) {
    if (d.signum() == 0) {
      return "0";
    }
    if (!inRange(d)) {
      throw new IllegalArgumentException(d + " is out of range");
    }
    BigDecimal s = d.stripTrailingZeros();
    String digits = s.unscaledValue().abs().toString();
    return (s.signum() < 0 ? "-" : "") + EcmaNumberOracle.layout(digits, exponent(s) + 1);
  }

  /** The decimal exponent of the leading digit. */
  private static int exponent(BigDecimal d) {
    return d.precision() - d.scale() - 1;
  }
}
