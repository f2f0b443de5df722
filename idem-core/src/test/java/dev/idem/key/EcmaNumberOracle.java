package dev.idem.key;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * A slow, obviously-correct ECMAScript {@code Number.prototype.toString} for tests, straight from
 * the spec (ECMA-262, Number::toString): find the least k such that some k-digit decimal rounds to
 * x; among those, take the one closest to x (ties: even); lay it out. Uses exact BigDecimal
 * arithmetic only, nothing from the code under test.
 */
final class EcmaNumberOracle {
  private EcmaNumberOracle() {}

  static String toString(double x) {
    if (x == 0) {
      return "0";
    }
    if (x < 0) {
      return "-" + toString(-x);
    }
    BigDecimal exact = new BigDecimal(x);
    for (int k = 1; k <= 17; k++) {
      BigDecimal floor = exact.round(new MathContext(k, RoundingMode.FLOOR));
      BigDecimal ceiling = exact.round(new MathContext(k, RoundingMode.CEILING));
      BigDecimal best = null;
      for (BigDecimal candidate : new BigDecimal[] {floor, ceiling}) {
        if (Double.parseDouble(candidate.toString()) != x) {
          continue;
        }
        if (best == null) {
          best = candidate;
          continue;
        }
        int c = candidate.subtract(exact).abs().compareTo(best.subtract(exact).abs());
        if (c < 0 || (c == 0 && lastDigitEven(candidate, k))) {
          best = candidate;
        }
      }
      if (best != null) {
        return layout(best.stripTrailingZeros());
      }
    }
    throw new AssertionError("no decimal of at most 17 digits rounds to " + x);
  }

  private static boolean lastDigitEven(BigDecimal d, int k) {
    BigDecimal scaled = d.round(new MathContext(k)).movePointRight(k - 1 - exponent(d));
    return scaled.toBigInteger().testBit(0) == false;
  }

  /** The decimal exponent of the leading digit. */
  private static int exponent(BigDecimal d) {
    return d.precision() - d.scale() - 1;
  }

  private static String layout(BigDecimal d) {
    return layout(d.unscaledValue().toString(), exponent(d) + 1);
  }

  /** ECMAScript's layout of digits {@code s} (no leading or trailing zeros) worth 0.s x 10^n. */
  static String layout(String s, int n) {
    int k = s.length();
    if (k <= n && n <= 21) {
      return s + "0".repeat(n - k);
    }
    if (0 < n && n <= 21) {
      return s.substring(0, n) + "." + s.substring(n);
    }
    if (-6 < n && n <= 0) {
      return "0." + "0".repeat(-n) + s;
    }
    int e = n - 1;
    String exp = "e" + (e < 0 ? "-" : "+") + Math.abs(e);
    return k == 1 ? s + exp : s.charAt(0) + "." + s.substring(1) + exp;
  }
}
