package dev.idem.key;

import com.fasterxml.jackson.core.io.NumberOutput;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Numbers the RFC 8785 way: the IEEE-754 double a JSON number denotes, written as ECMAScript's
 * {@code Number.prototype.toString} writes it (shortest digits that round-trip, the closest of
 * those, plain notation for 1e-7 &lt;= |x| &lt; 1e21, else {@code d.ddde±n}; -0 is 0).
 *
 * <p>Two paths. A number whose significant digits number at most 15 and whose magnitude is well
 * inside the normal double range needs no floating point at all: every decimal of at most 15
 * significant digits survives the trip to a double and back, and it is the only such decimal that
 * rounds to that double (adjacent 15-digit decimals are more than four ulps apart), so its digits
 * are the shortest round-trip digits and only the layout changes. Everything else is parsed with
 * {@link Double#parseDouble} and printed with the Schubfach shortest algorithm that jackson-core
 * ships ({@link NumberOutput#toString(double, boolean)}; Java 17's own {@code Double.toString} is
 * not always shortest), whose digits are then laid out the ECMAScript way.
 *
 * <p>Not thread-safe (it reuses a digit buffer); each canonicalizer owns one.
 */
final class JsonNumbers {
  /** Significant digits that always survive decimal -> double -> decimal. */
  static final int EXACT_DIGITS = 15;

  /** The longest canonical number, e.g. {@code -0.0000033333333333333333} is 25 bytes. */
  static final int MAX_LENGTH = 32;

  private final byte[] digits = new byte[32];

  /**
   * Writes the canonical form of the JSON number {@code in[s, e)} (already checked against the JSON
   * grammar and split into parts) at {@code out[o]}.
   *
   * @return the index after the written bytes, or -1 if the number is outside the double range
   */
  int write(
      byte[] in,
      int s,
      int e,
      boolean negative,
      int intStart,
      int intEnd,
      int fracStart,
      int fracEnd,
      long exponent,
      byte[] out,
      int o) {
    // Significant digits: from the first non-zero digit of int+frac to the last non-zero one.
    long n; // the value is 0.D x 10^n
    int first = intStart;
    while (first < intEnd && in[first] == '0') {
      first++;
    }
    int count = 0; // digits from the first non-zero one (trailing zeros included)
    int k = 0; // significant digits (trailing zeros excluded)
    if (first < intEnd) {
      n = intEnd - first;
      for (int i = first; i < intEnd; i++) {
        count = collect(in[i], count);
        k = in[i] != '0' ? count : k;
      }
      for (int i = fracStart; i < fracEnd; i++) {
        count = collect(in[i], count);
        k = in[i] != '0' ? count : k;
      }
    } else {
      first = fracStart;
      while (first < fracEnd && in[first] == '0') {
        first++;
      }
      n = -(first - fracStart);
      for (int i = first; i < fracEnd; i++) {
        count = collect(in[i], count);
        k = in[i] != '0' ? count : k;
      }
    }
    if (k == 0) {
      out[o] = '0'; // zero, whatever its sign or exponent
      return o + 1;
    }
    n += exponent;
    if (k <= EXACT_DIGITS && n >= -300 && n <= 308) {
      return layout(digits, k, (int) n, negative, out, o);
    }
    double v = Double.parseDouble(new String(in, s, e - s, StandardCharsets.ISO_8859_1));
    if (Double.isInfinite(v)) {
      return -1;
    }
    return writeDouble(v, out, o);
  }

  private int collect(byte digit, int count) {
    if (count < digits.length) {
      digits[count] = digit;
    }
    return count + 1;
  }

  /**
   * Returns the ECMAScript {@code Number.prototype.toString} of a finite double.
   *
   * @throws IllegalArgumentException if {@code v} is NaN or infinite
   */
  String format(double v) {
    if (!Double.isFinite(v)) {
      throw new IllegalArgumentException("JSON has no " + v);
    }
    byte[] out = new byte[MAX_LENGTH];
    int len = writeDouble(v, out, 0);
    return new String(out, 0, len, StandardCharsets.US_ASCII);
  }

  private int writeDouble(double v, byte[] out, int o) {
    if (v == 0) {
      out[o] = '0';
      return o + 1;
    }
    double abs = Math.abs(v);
    // Java notation: "123.45", "0.001", "1.0E21", "4.9E-324".
    String java = NumberOutput.toString(abs, true);
    int mark = java.indexOf('E');
    int mantissaEnd = mark < 0 ? java.length() : mark;
    int exp10 = mark < 0 ? 0 : Integer.parseInt(java, mark + 1, java.length(), 10);
    int count = 0;
    int point = -1;
    for (int i = 0; i < mantissaEnd; i++) {
      char c = java.charAt(i);
      if (c == '.') {
        point = count;
      } else {
        digits[count++] = (byte) c;
      }
    }
    int n = (point < 0 ? count : point) + exp10;
    int firstDigit = 0;
    while (digits[firstDigit] == '0') {
      firstDigit++;
      n--;
    }
    int k = count;
    while (digits[k - 1] == '0') {
      k--;
    }
    System.arraycopy(digits, firstDigit, digits, 0, k - firstDigit);
    k -= firstDigit;
    if (k == 2 && abs < Double.MIN_NORMAL) {
      // Java picks among 2-digit decimals when a 1-digit one also round-trips (4.9E-324);
      // ECMAScript wants the 1-digit one (5e-324). Only subnormals are coarse enough for that.
      int[] shortened = shortestSubnormal(abs, digits[0] - '0', n);
      if (shortened != null) {
        digits[0] = (byte) ('0' + shortened[0]);
        k = 1;
        n = shortened[1];
      }
    }
    return layout(digits, k, n, v < 0, out, o);
  }

  /**
   * Returns {digit, n} of the one-digit decimal {@code digit x 10^(n-1)} closest to {@code abs}
   * that still rounds to it (ties to the even digit), or null if none does.
   */
  private static int @Nullable [] shortestSubnormal(double abs, int lead, int n) {
    BigDecimal exact = new BigDecimal(abs);
    int @Nullable [] best = null;
    @Nullable BigDecimal bestDistance = null;
    for (int d = lead; d <= lead + 1; d++) {
      int digit = d == 10 ? 1 : d;
      int exp = d == 10 ? n + 1 : n;
      if (digit == 0) {
        continue;
      }
      BigDecimal candidate = new BigDecimal(BigInteger.valueOf(digit), -(exp - 1));
      if (Double.parseDouble(digit + "e" + (exp - 1)) != abs) {
        continue;
      }
      BigDecimal distance = candidate.subtract(exact).abs();
      int c = bestDistance == null ? -1 : distance.compareTo(bestDistance);
      if (c < 0 || (c == 0 && digit % 2 == 0)) {
        best = new int[] {digit, exp};
        bestDistance = distance;
      }
    }
    return best;
  }

  /** Writes digits {@code d[0, k)} with value {@code 0.d x 10^n} in ECMAScript notation. */
  static int layout(byte[] d, int k, int n, boolean negative, byte[] out, int o) {
    if (negative) {
      out[o++] = '-';
    }
    if (k <= n && n <= 21) {
      System.arraycopy(d, 0, out, o, k);
      o += k;
      for (int i = k; i < n; i++) {
        out[o++] = '0';
      }
    } else if (0 < n && n <= 21) {
      System.arraycopy(d, 0, out, o, n);
      o += n;
      out[o++] = '.';
      System.arraycopy(d, n, out, o, k - n);
      o += k - n;
    } else if (-6 < n && n <= 0) {
      out[o++] = '0';
      out[o++] = '.';
      for (int i = n; i < 0; i++) {
        out[o++] = '0';
      }
      System.arraycopy(d, 0, out, o, k);
      o += k;
    } else {
      out[o++] = d[0];
      if (k > 1) {
        out[o++] = '.';
        System.arraycopy(d, 1, out, o, k - 1);
        o += k - 1;
      }
      out[o++] = 'e';
      int e = n - 1;
      out[o++] = (byte) (e < 0 ? '-' : '+');
      e = Math.abs(e);
      if (e >= 100) {
        out[o++] = (byte) ('0' + e / 100);
      }
      if (e >= 10) {
        out[o++] = (byte) ('0' + (e / 10) % 10);
      }
      out[o++] = (byte) ('0' + e % 10);
    }
    return o;
  }
}
