package dev.idem.key;

/**
 * Numbers by their exact decimal value, never through a double: the canonical form of a JSON number
 * is its significant digits (from the first non-zero digit to the last non-zero one) and a decimal
 * exponent, laid out the way ECMAScript's {@code Number.prototype.toString} lays out digits (plain
 * notation for 1e-7 &lt;= |x| &lt; 1e21, else {@code d.ddde±n}; every zero is {@code 0}).
 *
 * <p>So {@code 1}, {@code 1.0}, {@code 1e0} and {@code 10E-1} are all {@code 1}, and {@code
 * 820982911946154508} stays {@code 820982911946154508}. Where the digits are the shortest ones of
 * the number's nearest double (every number of at most 15 significant digits in the normal double
 * range), this is exactly RFC 8785's form; elsewhere RFC 8785 would round and this keeps every
 * digit.
 *
 * <p>Range: a non-zero number's decimal exponent (the {@code e} of {@code d.ddd x 10^e}, {@code 1
 * <= d.ddd < 10}) must lie in [{@value #MIN_EXPONENT}, {@value #MAX_EXPONENT}], the decimal
 * exponents of IEEE-754 doubles; anything outside is refused, not rounded (no {@code 1e400} as
 * infinity, no {@code 1e-400} as 0). The number of digits is not limited.
 *
 * <p>Pure digit manipulation: no floating point, no {@code BigDecimal}, no allocation. Not
 * thread-safe (it holds the number being written); each canonicalizer owns one.
 */
final class JsonNumbers {
  /** The smallest decimal exponent of a non-zero number ({@code 1e-324}). */
  static final int MIN_EXPONENT = -324;

  /** The largest decimal exponent of a number ({@code 9.99e308}). */
  static final int MAX_EXPONENT = 308;

  /** The most digits an integer has in plain notation; longer ones are written {@code d.ddde+n}. */
  static final int PLAIN_DIGITS = 21;

  /** How many bytes the canonical form can be longer than the number's JSON text. */
  static final int MAX_GROWTH = 24;

  private static final byte[] NO_INPUT = new byte[0];

  // The digit sequence: the integer digits in[intStart, intEnd), then the fraction digits.
  private byte[] in = NO_INPUT;
  private int intStart;
  private int intLen;
  private int fracStart;

  /**
   * Writes the canonical form of a JSON number (already checked against the JSON grammar and split
   * into parts) at {@code out[o]}; {@code out} has room for the number's text plus {@link
   * #MAX_GROWTH} bytes.
   *
   * @param exponent the exponent as written, 0 if none (its magnitude may be clamped to a value far
   *     beyond the range)
   * @return the index after the written bytes, or -1 if the number is out of range
   */
  int write(
      byte[] in,
      boolean negative,
      int intStart,
      int intEnd,
      int fracStart,
      int fracEnd,
      long exponent,
      byte[] out,
      int o) {
    this.in = in;
    this.intStart = intStart;
    this.intLen = intEnd - intStart;
    this.fracStart = fracStart;
    try {
      return write(intLen + (fracEnd - fracStart), negative, exponent, out, o);
    } finally {
      this.in = NO_INPUT; // do not keep the body reachable from a thread-local
    }
  }

  /**
   * Writes the canonical form of a number written in scientific notation, {@code D[.ddd]e±x} with
   * one non-zero integer digit {@code D} at {@code in[digit]} (so its fraction, if any, starts at
   * {@code digit + 2}): the same bytes as {@link #write(byte[], boolean, int, int, int, int, long,
   * byte[], int) write}, without its general scans, as the digits are contiguous and the first is
   * significant.
   *
   * @param last the index after the fraction's last non-zero digit ({@code digit + 1} if none)
   * @param exponent the exponent as written, at most {@link #MAX_EXPONENT} in magnitude
   * @return the index after the written bytes, or -1 if the number is out of range
   */
  static int writeScientific(
      byte[] in, boolean negative, int digit, int last, int exponent, byte[] out, int o) {
    if (exponent < MIN_EXPONENT || exponent > MAX_EXPONENT) {
      return -1;
    }
    if (negative) {
      out[o++] = '-';
    }
    int fraction = last == digit + 1 ? 0 : last - digit - 2; // fraction digits kept
    int n = exponent + 1; // the value is 0.D x 10^n, with 1 + fraction significant digits
    if (n <= 0 || n > PLAIN_DIGITS) {
      return writeSmallOrExponent(in, digit, last, fraction, n, out, o);
    }
    // Plain notation, the common case: kept small enough for the JIT to inline into the parser.
    out[o++] = in[digit];
    if (n >= 1 + fraction) {
      for (int i = 0; i < fraction; i++) {
        out[o++] = in[digit + 2 + i];
      }
      for (int i = 1 + fraction; i < n; i++) {
        out[o++] = '0';
      }
    } else {
      for (int i = 0; i < n - 1; i++) {
        out[o++] = in[digit + 2 + i];
      }
      out[o++] = '.';
      for (int i = n - 1; i < fraction; i++) {
        out[o++] = in[digit + 2 + i];
      }
    }
    return o;
  }

  /** {@link #writeScientific} of a number below 1 ({@code 0.000ddd}) or written with {@code e}. */
  private static int writeSmallOrExponent(
      byte[] in, int digit, int last, int fraction, int n, byte[] out, int o) {
    if (n > -6 && n <= 0) {
      out[o++] = '0';
      out[o++] = '.';
      for (int i = n; i < 0; i++) {
        out[o++] = '0';
      }
      out[o++] = in[digit];
      for (int i = 0; i < fraction; i++) {
        out[o++] = in[digit + 2 + i];
      }
      return o;
    }
    // The mantissa as written, less its fraction's trailing zeros (and a '.' left bare).
    for (int i = digit; i < last; i++) {
      out[o++] = in[i];
    }
    return writeExponent(out, o, n - 1);
  }

  private int write(int total, boolean negative, long exponent, byte[] out, int o) {
    // The integer part has no leading zeros in JSON unless it is "0"; the scans run over each part
    // directly rather than through digit(i).
    byte[] in = this.in;
    int first = 0;
    if (in[intStart] == '0') {
      first = intLen;
      while (first < total && in[fracStart + first - intLen] == '0') {
        first++;
      }
      if (first == total) {
        out[o] = '0'; // zero, whatever its sign or exponent
        return o + 1;
      }
    }
    int last = total - 1;
    while (last >= intLen && in[fracStart + last - intLen] == '0') {
      last--;
    }
    if (last < intLen) {
      while (in[intStart + last] == '0') {
        last--;
      }
    }
    int k = last - first + 1;
    long n = intLen - first + exponent; // the value is 0.D x 10^n, D the k significant digits
    if (n - 1 < MIN_EXPONENT || n - 1 > MAX_EXPONENT) {
      return -1;
    }
    return layout(first, k, (int) n, negative, out, o);
  }

  private byte digit(int i) {
    return i < intLen ? in[intStart + i] : in[fracStart + i - intLen];
  }

  /**
   * Copies digits {@code [from, from + count)} of the sequence to {@code out[o]}, byte by byte: a
   * number has a few digits, fewer than an {@code arraycopy} call is worth.
   */
  private int digits(int from, int count, byte[] out, int o) {
    byte[] in = this.in;
    int end = from + count;
    if (from < intLen) {
      int n = Math.min(end, intLen) - from;
      for (int i = 0, src = intStart + from; i < n; i++) {
        out[o + i] = in[src + i];
      }
      o += n;
      from += n;
    }
    for (int i = 0, n = end - from, src = fracStart + from - intLen; i < n; i++) {
      out[o + i] = in[src + i];
    }
    return o + Math.max(0, end - from);
  }

  /**
   * Writes the {@code k} digits at {@code first} with value {@code 0.D x 10^n} in ECMAScript's
   * layout.
   */
  private int layout(int first, int k, int n, boolean negative, byte[] out, int o) {
    if (negative) {
      out[o++] = '-';
    }
    if (k <= n && n <= PLAIN_DIGITS) {
      o = digits(first, k, out, o);
      for (int i = k; i < n; i++) {
        out[o++] = '0';
      }
    } else if (0 < n && n <= PLAIN_DIGITS) {
      o = digits(first, n, out, o);
      out[o++] = '.';
      o = digits(first + n, k - n, out, o);
    } else if (-6 < n && n <= 0) {
      out[o++] = '0';
      out[o++] = '.';
      for (int i = n; i < 0; i++) {
        out[o++] = '0';
      }
      o = digits(first, k, out, o);
    } else {
      out[o++] = digit(first);
      if (k > 1) {
        out[o++] = '.';
        o = digits(first + 1, k - 1, out, o);
      }
      o = writeExponent(out, o, n - 1);
    }
    return o;
  }

  /** Writes {@code e±x} ({@code x} without leading zeros) at {@code out[o]}; returns the end. */
  static int writeExponent(byte[] out, int o, int exponent) {
    out[o++] = 'e';
    out[o++] = (byte) (exponent < 0 ? '-' : '+');
    int e = Math.abs(exponent);
    if (e >= 100) {
      out[o++] = (byte) ('0' + e / 100);
    }
    if (e >= 10) {
      out[o++] = (byte) ('0' + (e / 10) % 10);
    }
    out[o++] = (byte) ('0' + e % 10);
    return o;
  }
}
