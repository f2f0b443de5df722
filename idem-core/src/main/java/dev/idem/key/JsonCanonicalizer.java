package dev.idem.key;

import dev.idem.internal.Sha256Words;
import java.security.DigestException;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The RFC 8785 canonicalizer: one streaming pass over UTF-8 JSON bytes that validates them as
 * I-JSON and writes the canonical form into a reusable buffer. Not thread-safe: each thread uses
 * its own instance through {@link #get()}.
 *
 * <p>How it stays fast: no tree and no strings. Values are written straight to {@link #out} as they
 * are read; runs of string bytes that need no escaping are copied with one {@code arraycopy};
 * integers of up to 15 digits are copied as they are. Each member of an object is recorded as three
 * offsets into {@link #out} (name start, name end, member end); when the object closes its members
 * are sorted by those offsets and, only if they were out of order, the object's bytes are permuted
 * through a scratch buffer. Nested objects are sorted before their parents, so each permutation
 * moves bytes that are already canonical.
 */
final class JsonCanonicalizer {
  /** Buffers larger than this are dropped after use, so one huge body does not pin memory. */
  private static final int MAX_RETAINED = 1 << 18;

  private static final int INITIAL = 1024;
  private static final byte[] NO_INPUT = new byte[0];
  private static final byte[] HEX =
      "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  /** String bytes copied as they are: printable ASCII except {@code "} and {@code \}. */
  private static final boolean[] PLAIN = new boolean[256];

  static {
    for (int b = 0x20; b < 0x80; b++) {
      PLAIN[b] = b != '"' && b != '\\';
    }
  }

  private static final ThreadLocal<JsonCanonicalizer> LOCAL =
      ThreadLocal.withInitial(JsonCanonicalizer::new);

  private byte[] in = NO_INPUT;
  private int pos;
  private int end;
  private int start;

  /** The canonical output of the last call, in {@code out[0, outLen)}. */
  byte[] out = new byte[INITIAL];

  int outLen;

  /** Triples (name start, name end, member end) of the members of every open object. */
  private int[] members = new int[3 * 32];

  private int memberTop;
  private int[] order = new int[32];
  private int[] orderTmp = new int[32];
  private byte[] scratch = new byte[INITIAL];
  private final JsonNumbers numbers = new JsonNumbers();
  private final MessageDigest sha = Sha256Words.newDigest();

  /** Scratch for a digest that is copied out right away (e.g. into a {@code Fingerprint}). */
  final byte[] digest = new byte[32];

  private JsonCanonicalizer() {}

  /** Returns this thread's canonicalizer. */
  static JsonCanonicalizer get() {
    return LOCAL.get();
  }

  /**
   * Canonicalizes {@code json[off, off + len)} into {@code out[0, outLen)}.
   *
   * @throws InvalidJsonException if the bytes are not I-JSON
   */
  void canonicalize(byte[] json, int off, int len) {
    in = json;
    pos = off;
    start = off;
    end = off + len;
    outLen = 0;
    memberTop = 0;
    ensure(len + 64);
    try {
      if (len >= 3
          && json[off] == (byte) 0xEF
          && json[off + 1] == (byte) 0xBB
          && json[off + 2] == (byte) 0xBF) {
        pos += 3; // RFC 8259 section 8.1: a parser may ignore a byte order mark
      }
      skipWhitespace();
      if (pos >= end) {
        throw error(len == 0 ? "the input is empty" : "the input has no value");
      }
      value(0);
      skipWhitespace();
      if (pos < end) {
        throw error("unexpected " + describe(in[pos]) + " after the JSON value");
      }
    } finally {
      in = NO_INPUT;
    }
  }

  /**
   * Writes SHA-256 of the canonical form of {@code json} into {@code digest[0, 32)}.
   *
   * @throws InvalidJsonException if the bytes are not I-JSON
   */
  void sha256(byte[] json, byte[] digest) {
    canonicalize(json, 0, json.length);
    sha.update(out, 0, outLen);
    try {
      sha.digest(digest, 0, 32);
    } catch (DigestException e) {
      throw new IllegalStateException("SHA-256 digest needs 32 bytes", e);
    }
  }

  /** Drops buffers that grew past {@link #MAX_RETAINED}; call when done with {@link #out}. */
  void trim() {
    if (out.length > MAX_RETAINED) {
      out = new byte[INITIAL];
    }
    if (scratch.length > MAX_RETAINED) {
      scratch = new byte[INITIAL];
    }
    if (members.length > MAX_RETAINED / 4) {
      members = new int[3 * 32];
      order = new int[32];
      orderTmp = new int[32];
    }
  }

  private void value(int depth) {
    byte b = in[pos];
    switch (b) {
      case '{' -> object(depth + 1);
      case '[' -> array(depth + 1);
      case '"' -> string();
      case 't' -> literal(TRUE);
      case 'f' -> literal(FALSE);
      case 'n' -> literal(NULL);
      default -> {
        if (b == '-' || (b >= '0' && b <= '9')) {
          number();
        } else {
          throw error("unexpected " + describe(b) + " where a value was expected");
        }
      }
    }
  }

  private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
  private static final byte[] NULL = {'n', 'u', 'l', 'l'};

  private void literal(byte[] word) {
    if (end - pos < word.length
        || !Arrays.equals(in, pos, pos + word.length, word, 0, word.length)) {
      throw error("unexpected " + describe(in[pos]) + " where a value was expected");
    }
    System.arraycopy(word, 0, out, outLen, word.length);
    outLen += word.length;
    pos += word.length;
  }

  private void object(int depth) {
    if (depth > CanonicalJson.MAX_DEPTH) {
      throw error("nesting deeper than " + CanonicalJson.MAX_DEPTH + " arrays and objects");
    }
    int objectStart = pos;
    pos++;
    out[outLen++] = '{';
    skipWhitespace();
    if (pos < end && in[pos] == '}') {
      pos++;
      out[outLen++] = '}';
      return;
    }
    int base = memberTop;
    while (true) {
      if (pos >= end || in[pos] != '"') {
        throw error("expected a member name (a string)");
      }
      int nameStart = outLen;
      string();
      int nameEnd = outLen;
      skipWhitespace();
      if (pos >= end || in[pos] != ':') {
        throw error("expected ':' after a member name");
      }
      pos++;
      out[outLen++] = ':';
      skipWhitespace();
      if (pos >= end) {
        throw error("expected a value");
      }
      value(depth);
      pushMember(nameStart, nameEnd, outLen);
      skipWhitespace();
      if (pos < end && in[pos] == ',') {
        pos++;
        out[outLen++] = ',';
        skipWhitespace();
      } else if (pos < end && in[pos] == '}') {
        pos++;
        break;
      } else {
        throw error("expected ',' or '}' in an object");
      }
    }
    sortMembers(base, objectStart);
    memberTop = base;
    out[outLen++] = '}';
  }

  private void array(int depth) {
    if (depth > CanonicalJson.MAX_DEPTH) {
      throw error("nesting deeper than " + CanonicalJson.MAX_DEPTH + " arrays and objects");
    }
    pos++;
    out[outLen++] = '[';
    skipWhitespace();
    if (pos < end && in[pos] == ']') {
      pos++;
      out[outLen++] = ']';
      return;
    }
    while (true) {
      if (pos >= end) {
        throw error("expected a value");
      }
      value(depth);
      skipWhitespace();
      if (pos < end && in[pos] == ',') {
        pos++;
        out[outLen++] = ',';
        skipWhitespace();
      } else if (pos < end && in[pos] == ']') {
        pos++;
        out[outLen++] = ']';
        return;
      } else {
        throw error("expected ',' or ']' in an array");
      }
    }
  }

  /**
   * Copies a string, validating UTF-8 and rewriting escapes the RFC 8785 way. Never writes more
   * bytes than it reads, so the capacity reserved up front suffices.
   */
  private void string() {
    out[outLen++] = '"';
    int run = ++pos;
    byte[] in = this.in;
    while (true) {
      while (pos < end && PLAIN[in[pos] & 0xFF]) {
        pos++;
      }
      if (pos >= end) {
        throw error("unterminated string");
      }
      int b = in[pos] & 0xFF;
      if (b == '"') {
        copy(run, pos);
        pos++;
        out[outLen++] = '"';
        return;
      } else if (b == '\\') {
        copy(run, pos);
        escape();
        run = pos;
      } else if (b < 0x20) {
        throw error("control character " + describe(in[pos]) + " in a string must be escaped");
      } else {
        pos = utf8(pos);
      }
    }
  }

  private void copy(int from, int to) {
    int n = to - from;
    System.arraycopy(in, from, out, outLen, n);
    outLen += n;
  }

  /** Validates one multi-byte UTF-8 sequence at {@code p} and returns the index after it. */
  private int utf8(int p) {
    int b0 = in[p] & 0xFF;
    int need;
    int lo = 0x80;
    int hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2;
      if (b0 == 0xE0) {
        lo = 0xA0; // no overlong forms
      } else if (b0 == 0xED) {
        hi = 0x9F; // no UTF-16 surrogates
      }
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3;
      if (b0 == 0xF0) {
        lo = 0x90;
      } else if (b0 == 0xF4) {
        hi = 0x8F; // nothing above U+10FFFF
      }
    } else {
      throw error("invalid UTF-8 byte 0x" + Integer.toHexString(b0));
    }
    if (end - p <= need) {
      throw error("truncated UTF-8 sequence");
    }
    int b1 = in[p + 1] & 0xFF;
    if (b1 < lo || b1 > hi) {
      throw error("invalid UTF-8 sequence");
    }
    for (int i = 2; i <= need; i++) {
      int bi = in[p + i] & 0xFF;
      if (bi < 0x80 || bi > 0xBF) {
        throw error("invalid UTF-8 sequence");
      }
    }
    return p + need + 1;
  }

  private void escape() {
    int at = pos;
    pos++;
    if (pos >= end) {
      throw error("unterminated string");
    }
    byte c = in[pos++];
    switch (c) {
      case '"', '\\', 'b', 'f', 'n', 'r', 't' -> {
        out[outLen++] = '\\';
        out[outLen++] = c;
      }
      case '/' -> out[outLen++] = '/';
      case 'u' -> {
        int cp = hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end - pos < 6 || in[pos] != '\\' || in[pos + 1] != 'u') {
            pos = at;
            throw error("lone surrogate \\u" + Integer.toHexString(cp) + " in a string");
          }
          pos += 2;
          int low = hex4();
          if (low < 0xDC00 || low > 0xDFFF) {
            pos = at;
            throw error("lone surrogate \\u" + Integer.toHexString(cp) + " in a string");
          }
          writeUtf8(Character.toCodePoint((char) cp, (char) low));
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          pos = at;
          throw error("lone surrogate \\u" + Integer.toHexString(cp) + " in a string");
        } else {
          writeChar(cp);
        }
      }
      default -> {
        pos = at;
        throw error("invalid escape \\" + (char) (c & 0xFF) + " in a string");
      }
    }
  }

  private int hex4() {
    if (end - pos < 4) {
      throw error("\\u needs four hex digits");
    }
    int v = 0;
    for (int i = 0; i < 4; i++) {
      int d = Character.digit(in[pos + i], 16);
      if (d < 0) {
        throw error("\\u needs four hex digits");
      }
      v = (v << 4) | d;
    }
    pos += 4;
    return v;
  }

  /** Writes one BMP code point, escaped as RFC 8785 section 3.2.2.2 says. */
  private void writeChar(int c) {
    if (c < 0x20) {
      out[outLen++] = '\\';
      switch (c) {
        case '\b' -> out[outLen++] = 'b';
        case '\t' -> out[outLen++] = 't';
        case '\n' -> out[outLen++] = 'n';
        case '\f' -> out[outLen++] = 'f';
        case '\r' -> out[outLen++] = 'r';
        default -> {
          out[outLen++] = 'u';
          out[outLen++] = '0';
          out[outLen++] = '0';
          out[outLen++] = HEX[c >> 4];
          out[outLen++] = HEX[c & 0xF];
        }
      }
    } else if (c == '"' || c == '\\') {
      out[outLen++] = '\\';
      out[outLen++] = (byte) c;
    } else {
      writeUtf8(c);
    }
  }

  private void writeUtf8(int cp) {
    if (cp < 0x80) {
      out[outLen++] = (byte) cp;
    } else if (cp < 0x800) {
      out[outLen++] = (byte) (0xC0 | (cp >> 6));
      out[outLen++] = (byte) (0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out[outLen++] = (byte) (0xE0 | (cp >> 12));
      out[outLen++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
      out[outLen++] = (byte) (0x80 | (cp & 0x3F));
    } else {
      out[outLen++] = (byte) (0xF0 | (cp >> 18));
      out[outLen++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
      out[outLen++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
      out[outLen++] = (byte) (0x80 | (cp & 0x3F));
    }
  }

  private void number() {
    int s = pos;
    boolean negative = in[pos] == '-';
    if (negative) {
      pos++;
    }
    int intStart = pos;
    if (pos < end && in[pos] == '0') {
      pos++;
    } else if (pos < end && in[pos] >= '1' && in[pos] <= '9') {
      pos++;
      while (pos < end && isDigit(in[pos])) {
        pos++;
      }
    } else {
      throw error("a number needs a digit after '-'");
    }
    int intEnd = pos;
    int fracStart = pos;
    int fracEnd = pos;
    if (pos < end && in[pos] == '.') {
      fracStart = ++pos;
      while (pos < end && isDigit(in[pos])) {
        pos++;
      }
      if (pos == fracStart) {
        throw error("a number needs a digit after '.'");
      }
      fracEnd = pos;
    }
    long exponent = 0;
    boolean hasExponent = false;
    if (pos < end && (in[pos] == 'e' || in[pos] == 'E')) {
      hasExponent = true;
      pos++;
      boolean negativeExponent = false;
      if (pos < end && (in[pos] == '+' || in[pos] == '-')) {
        negativeExponent = in[pos] == '-';
        pos++;
      }
      int expStart = pos;
      while (pos < end && isDigit(in[pos])) {
        if (exponent < 1_000_000_000L) { // beyond this only the sign matters
          exponent = exponent * 10 + (in[pos] - '0');
        }
        pos++;
      }
      if (pos == expStart) {
        throw error("a number needs a digit in its exponent");
      }
      if (negativeExponent) {
        exponent = -exponent;
      }
    }
    // Numbers are the only values whose canonical form can be longer than their input.
    ensure(outLen + (end - pos) + JsonNumbers.MAX_LENGTH);
    if (fracStart == fracEnd && !hasExponent && intEnd - intStart <= JsonNumbers.EXACT_DIGITS) {
      // Fast path: an integer of at most 15 digits is exact in a double and already canonical.
      if (intEnd - intStart == 1 && in[intStart] == '0') {
        out[outLen++] = '0'; // -0 is 0
      } else {
        copy(s, intEnd);
      }
      return;
    }
    int written =
        numbers.write(
            in, s, pos, negative, intStart, intEnd, fracStart, fracEnd, exponent, out, outLen);
    if (written < 0) {
      pos = s;
      throw error("number outside the IEEE-754 double range");
    }
    outLen = written;
  }

  private static boolean isDigit(byte b) {
    return b >= '0' && b <= '9';
  }

  private void skipWhitespace() {
    byte[] in = this.in;
    while (pos < end) {
      byte b = in[pos];
      if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
        pos++;
      } else {
        return;
      }
    }
  }

  private void pushMember(int nameStart, int nameEnd, int memberEnd) {
    if (memberTop + 3 > members.length) {
      members = Arrays.copyOf(members, members.length * 2);
    }
    members[memberTop] = nameStart;
    members[memberTop + 1] = nameEnd;
    members[memberTop + 2] = memberEnd;
    memberTop += 3;
  }

  /**
   * Sorts the members {@code members[base, memberTop)} of the object just read by name, in UTF-16
   * code unit order, rejecting duplicates, and permutes the object's bytes if they were unsorted.
   */
  private void sortMembers(int base, int objectStart) {
    int n = (memberTop - base) / 3;
    if (n < 2) {
      return;
    }
    boolean sorted = true;
    for (int i = 1; i < n; i++) {
      int c = compareMembers(base + 3 * (i - 1), base + 3 * i);
      if (c == 0) {
        throw duplicate(base + 3 * i, objectStart);
      }
      if (c > 0) {
        sorted = false;
        break;
      }
    }
    if (sorted) {
      return;
    }
    if (order.length < n) {
      order = new int[Math.max(n, order.length * 2)];
      orderTmp = new int[order.length];
    }
    for (int i = 0; i < n; i++) {
      order[i] = base + 3 * i;
    }
    mergeSort(order, orderTmp, 0, n);
    for (int i = 1; i < n; i++) {
      if (compareMembers(order[i - 1], order[i]) == 0) {
        throw duplicate(order[i], objectStart);
      }
    }
    int regionStart = members[base];
    int regionEnd = members[memberTop - 1];
    int length = regionEnd - regionStart;
    if (scratch.length < length) {
      scratch = new byte[Math.max(length, scratch.length * 2)];
    }
    System.arraycopy(out, regionStart, scratch, 0, length);
    int w = regionStart;
    for (int i = 0; i < n; i++) {
      int m = order[i];
      int from = members[m] - regionStart;
      int len = members[m + 2] - members[m];
      System.arraycopy(scratch, from, out, w, len);
      w += len;
      if (i < n - 1) {
        out[w++] = ',';
      }
    }
  }

  /** Stable merge sort of member indexes; insertion sort for short runs. */
  private void mergeSort(int[] a, int[] tmp, int from, int to) {
    if (to - from <= 12) {
      for (int i = from + 1; i < to; i++) {
        int v = a[i];
        int j = i - 1;
        while (j >= from && compareMembers(a[j], v) > 0) {
          a[j + 1] = a[j];
          j--;
        }
        a[j + 1] = v;
      }
      return;
    }
    int mid = (from + to) >>> 1;
    mergeSort(a, tmp, from, mid);
    mergeSort(a, tmp, mid, to);
    if (compareMembers(a[mid - 1], a[mid]) <= 0) {
      return;
    }
    System.arraycopy(a, from, tmp, from, to - from);
    int i = from;
    int j = mid;
    for (int k = from; k < to; k++) {
      if (j >= to || (i < mid && compareMembers(tmp[i], tmp[j]) <= 0)) {
        a[k] = tmp[i++];
      } else {
        a[k] = tmp[j++];
      }
    }
  }

  /** Compares two members' names (canonical string bytes between the quotes). */
  private int compareMembers(int a, int b) {
    return CanonicalStrings.compare(
        out, members[a] + 1, members[a + 1] - 1, members[b] + 1, members[b + 1] - 1);
  }

  private InvalidJsonException duplicate(int member, int objectStart) {
    String name = CanonicalStrings.decode(out, members[member] + 1, members[member + 1] - 1);
    return new InvalidJsonException(
        "duplicate member name \"" + CanonicalStrings.abbreviate(name) + "\" in the object",
        objectStart - start);
  }

  private void ensure(int capacity) {
    if (out.length < capacity) {
      out = Arrays.copyOf(out, Math.max(capacity, out.length * 2));
    }
  }

  private InvalidJsonException error(String problem) {
    return new InvalidJsonException(problem, pos - start);
  }

  private static String describe(byte b) {
    int c = b & 0xFF;
    if (c >= 0x21 && c < 0x7F) {
      return "'" + (char) c + "'";
    }
    return "byte 0x" + (c < 0x10 ? "0" : "") + Integer.toHexString(c);
  }
}
