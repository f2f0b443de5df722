package dev.idem.key;

import dev.idem.internal.Sha256Words;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The canonicalizer ({@link CanonicalJson}: RFC 8785 with exact numbers): one streaming pass over
 * UTF-8 JSON bytes that validates them as I-JSON and writes the canonical form into a reusable
 * buffer. Not thread-safe: each thread uses its own instance through {@link #get()}.
 *
 * <p>How it stays fast: no tree, no strings, and most bytes are copied in bulk. The canonical form
 * of compact JSON is mostly the input itself: the same structural characters, string bytes and
 * integers. So the parser only validates such bytes and leaves them in a pending <em>run</em> of
 * input ({@code in[runStart, pos)}), which is copied to {@link #out} in one {@code arraycopy} when
 * something differs: whitespace to drop, an escape or a number to rewrite, or an object to sort.
 * The logical output is always {@code out[0, outLen)} followed by the run.
 *
 * <p>Each member of an object is recorded as three output offsets (name start, name end, member
 * end) plus an 8-byte name prefix for cheap comparisons. When the object closes, its members are
 * sorted by name and, only if they were out of order, the object's bytes are permuted through a
 * scratch buffer. Nested objects are sorted before their parents, so a permutation moves bytes that
 * are already canonical. A few sorted orders are kept, by the objects' name prefixes: an object
 * whose names come as those of one sorted before (the same sender's schema, typically) takes that
 * order without a sort.
 */
final class JsonCanonicalizer {
  /** Buffers larger than this are dropped after use, so one huge body does not pin memory. */
  private static final int MAX_RETAINED = 1 << 18;

  private static final int INITIAL = 1024;

  /** How many member orders {@link #sortByPrefix} keeps, one per slot (see {@link #shapeSlot}). */
  private static final int SHAPE_BITS = 4;

  private static final int SHAPES = 1 << SHAPE_BITS;

  /** The widest object whose member order is kept. */
  private static final int MAX_SHAPE = 128;

  private static final byte[] NO_INPUT = new byte[0];
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
  private static final byte[] NULL = {'n', 'u', 'l', 'l'};

  /** String bytes kept as they are: printable ASCII except {@code "} and {@code \}. */
  private static final boolean[] PLAIN = new boolean[256];

  static {
    for (int b = 0x20; b < 0x80; b++) {
      PLAIN[b] = b != '"' && b != '\\';
    }
  }

  /**
   * The escapes that RFC 8785 writes as they are, by the byte after the backslash: one of {@code "
   * \ b f n r t}.
   */
  private static final boolean[] KEPT_ESCAPE = new boolean[256];

  static {
    for (byte b : new byte[] {'"', '\\', 'b', 'f', 'n', 'r', 't'}) {
      KEPT_ESCAPE[b] = true;
    }
  }

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static final VarHandle BIG_LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  private static final ThreadLocal<JsonCanonicalizer> LOCAL =
      ThreadLocal.withInitial(JsonCanonicalizer::new);

  private byte[] in = NO_INPUT;
  private int pos;
  private int end;
  private int start;

  /** Where the pending run of input that is copied to the output as it is begins. */
  private int runStart;

  /** The canonical output of the last call, in {@code out[0, outLen)}. */
  byte[] out = new byte[INITIAL];

  int outLen;

  /** The deepest nesting the current call accepts. */
  private int maxDepth = CanonicalJson.MAX_DEPTH;

  /** The longest member name of the last call, in canonical bytes with its quotes. */
  int longestName;

  /** The largest (text length + |written exponent|) of any number of the last call. */
  int numberReach;

  /** Triples (name start, name end, member end) of the members of every open object. */
  private int[] members = new int[3 * 32];

  /**
   * Per member (triple index / 3): the first 8 name bytes, big-endian, zero-padded, if they are
   * plain ASCII; else -1. Canonical names never hold a raw 0x00, so comparing two such prefixes as
   * unsigned longs orders the names exactly, as long as the prefixes differ.
   */
  private long[] prefixes = new long[32];

  private int memberTop;

  /** Where the object being sorted starts in the input, for a duplicate's error message. */
  private int objectStart;

  private int[] order = new int[32];

  /**
   * The sorted order of the object being sorted: its members are {@code permutationBase +
   * permutation[i]}, {@code permutation} being {@link #order} (base 0) or a kept order.
   */
  private int[] permutation = order;

  private int permutationBase;
  private int[] orderTmp = new int[32];
  private long[] keys = new long[32];
  private long[] keysTmp = new long[32];
  private byte[] scratch = new byte[INITIAL];

  /**
   * Per slot, the prefixes (see {@link #prefixes}) of the members of the last unsorted object
   * sorted there by prefix, {@link #shapeSize} of them; null or size 0 if none.
   */
  private final long[][] shapePrefixes = new long[SHAPES][];

  /** Per slot: the sorted order of that object, as member offsets from its first member. */
  private final int[][] shapeOrder = new int[SHAPES][];

  /** Per slot: how many members that object has (0: none kept). */
  private final int[] shapeSize = new int[SHAPES];

  /**
   * Per slot: the positions in that order of the members whose prefixes tie with the one before
   * (names sharing seven bytes), {@link #shapeTieCount} of them, to compare whole names again.
   */
  private final int[][] shapeTies = new int[SHAPES][];

  private final int[] shapeTieCount = new int[SHAPES];

  /** The tie positions of the order being computed (see {@link #shapeTies}). */
  private int[] tiePositions = new int[32];

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
    canonicalize(json, off, len, CanonicalJson.MAX_DEPTH);
  }

  /**
   * Canonicalizes {@code json[off, off + len)} with at most {@code maxDepth} nested arrays and
   * objects, recording {@link #longestName} and {@link #numberReach}.
   *
   * @throws InvalidJsonException if the bytes are not I-JSON or nested deeper
   */
  void canonicalize(byte[] json, int off, int len, int maxDepth) {
    this.maxDepth = maxDepth;
    longestName = 0;
    numberReach = 0;
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
      runStart = pos;
      skipWhitespace();
      if (pos >= end) {
        throw error(len == 0 ? "the input is empty" : "the input has no value");
      }
      value(0);
      flush(pos);
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

  /** This thread's SHA-256, for a digest of bytes this canonicalizer wrote earlier. */
  MessageDigest sha() {
    return sha;
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
      prefixes = new long[32];
      order = new int[32];
      permutation = order;
      orderTmp = new int[32];
      tiePositions = new int[32];
      keys = new long[32];
      keysTmp = new long[32];
    }
  }

  /** The output offset that input offset {@code pos} maps to. */
  private int outPos() {
    return outLen + pos - runStart;
  }

  /** Copies the pending run up to {@code upTo} to the output and starts a new run there. */
  private void flush(int upTo) {
    int n = upTo - runStart;
    if (n > 0) {
      System.arraycopy(in, runStart, out, outLen, n);
      outLen += n;
    }
    runStart = upTo;
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

  private void literal(byte[] word) {
    if (end - pos < word.length
        || !Arrays.equals(in, pos, pos + word.length, word, 0, word.length)) {
      throw error("unexpected " + describe(in[pos]) + " where a value was expected");
    }
    pos += word.length;
  }

  private void object(int depth) {
    if (depth > maxDepth) {
      throw error("nesting deeper than " + maxDepth + " arrays and objects");
    }
    int objectAt = pos;
    pos++;
    skipWhitespace();
    if (pos < end && in[pos] == '}') {
      pos++;
      return;
    }
    int base = memberTop;
    while (true) {
      if (pos >= end || in[pos] != '"') {
        throw error("expected a member name (a string)");
      }
      int nameStart = outPos();
      int nameEnd = -1;
      long prefix = -1;
      int p = pos + 1;
      if (p + 8 <= end) {
        long x = (long) LONGS.get(in, p);
        long flags = plainFlags(x);
        int q = Long.numberOfTrailingZeros(flags) >>> 3;
        if (flags == 0) {
          // Eight plain bytes: the canonical name starts with them as they are.
          string();
          nameEnd = outPos();
          prefix = Long.reverseBytes(x);
        } else if (in[p + q] == '"') {
          // A plain name of at most seven bytes, read and keyed with one load (most names).
          pos = p + q + 1;
          nameEnd = nameStart + q + 2;
          prefix = Long.reverseBytes(x) & ~(-1L >>> (q << 3));
        }
      }
      if (nameEnd < 0) {
        string();
        nameEnd = outPos();
        // Before the value: a value that is rewritten flushes the name to the output just before,
        // and reading eight bytes across those fresh stores stalls (no store-to-load forwarding).
        prefix = namePrefix(nameStart, nameEnd);
      }
      if (nameEnd - nameStart > longestName) {
        longestName = nameEnd - nameStart;
      }
      // Compact JSON first: one test for the ':' (and the ',' or '}' below), whitespace after.
      if (pos >= end || in[pos] != ':') {
        skipWhitespace();
        if (pos >= end || in[pos] != ':') {
          throw error("expected ':' after a member name");
        }
      }
      pos++;
      skipWhitespace();
      if (pos >= end) {
        throw error("expected a value");
      }
      value(depth);
      pushMember(nameStart, nameEnd, outPos(), prefix);
      byte next = pos < end ? in[pos] : 0;
      if (next != ',' && next != '}') {
        skipWhitespace();
        next = pos < end ? in[pos] : 0;
      }
      if (next == ',') {
        pos++;
        skipWhitespace();
      } else if (next == '}') {
        pos++;
        break;
      } else {
        throw error("expected ',' or '}' in an object");
      }
    }
    if (memberTop - base > 3) {
      sortMembers(base, objectAt);
    }
    memberTop = base;
  }

  private void array(int depth) {
    if (depth > maxDepth) {
      throw error("nesting deeper than " + maxDepth + " arrays and objects");
    }
    pos++;
    skipWhitespace();
    if (pos < end && in[pos] == ']') {
      pos++;
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
        skipWhitespace();
      } else if (pos < end && in[pos] == ']') {
        pos++;
        return;
      } else {
        throw error("expected ',' or ']' in an array");
      }
    }
  }

  /**
   * Reads a string, validating UTF-8. Plain bytes and multi-byte UTF-8 stay in the run; escapes are
   * rewritten the RFC 8785 way, never longer than they were.
   */
  private void string() {
    byte[] in = this.in;
    int end = this.end;
    int p = pos + 1;
    while (true) {
      p = scanPlain(in, p, end);
      if (p >= end) {
        pos = p;
        throw error("unterminated string");
      }
      int b = in[p] & 0xFF;
      if (b == '"') {
        pos = p + 1;
        return;
      }
      pos = p;
      if (b == '\\') {
        if (p + 1 < end && KEPT_ESCAPE[in[p + 1] & 0xFF]) {
          p += 2; // written the canonical way already: it stays in the run
          continue;
        }
        flush(p);
        escape();
        runStart = pos;
        p = pos;
      } else if (b < 0x20) {
        throw error("control character " + describe(in[p]) + " in a string must be escaped");
      } else {
        p = utf8(p);
      }
    }
  }

  /**
   * Returns the index of the first byte at or after {@code p} that is not {@link #PLAIN} (or {@code
   * end}). Eight bytes at a time: a byte is flagged if its high bit is set, it is below 0x20, or it
   * equals {@code "} or {@code \}. Borrows can only flag bytes after a truly flagged one, so the
   * lowest flag is exact.
   */
  private static int scanPlain(byte[] in, int p, int end) {
    while (p + 8 <= end) {
      long flags = plainFlags((long) LONGS.get(in, p));
      if (flags != 0) {
        return p + (Long.numberOfTrailingZeros(flags) >>> 3);
      }
      p += 8;
    }
    while (p < end && PLAIN[in[p] & 0xFF]) {
      p++;
    }
    return p;
  }

  /**
   * Flags (high bit) the bytes of the little-endian word {@code x} that are not {@link #PLAIN}; the
   * lowest flag is exact (see {@link #scanPlain}).
   */
  private static long plainFlags(long x) {
    long quote = x ^ 0x2222222222222222L;
    long backslash = x ^ 0x5C5C5C5C5C5C5C5CL;
    return (x
            | (x - 0x2020202020202020L)
            | ((quote - 0x0101010101010101L) & ~quote)
            | ((backslash - 0x0101010101010101L) & ~backslash))
        & 0x8080808080808080L;
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

  /** Rewrites the escape at {@code pos} to the output (the run was flushed up to it). */
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

  /**
   * Reads a number. One that is canonical as written (an integer, or a decimal without trailing
   * fraction zeros, of at most 21 integer digits not starting with 0, and no exponent: most
   * numbers) is read here, small enough for the JIT to inline into {@link #value}; every other
   * number goes on in {@link #number(int, boolean, int, int, int, int)}.
   */
  private void number() {
    byte[] in = this.in;
    int end = this.end;
    int s = pos;
    int p = s;
    boolean negative = in[p] == '-';
    if (negative) {
      p++;
    }
    int intStart = p;
    if (p < end && in[p] >= '1' && in[p] <= '9') {
      p = scanDigits(in, p + 1, end);
    } else if (p < end && in[p] == '0') {
      p++;
    } else {
      pos = p;
      throw error("a number needs a digit after '-'");
    }
    int intEnd = p;
    if (p < end && in[p] == '.') {
      p = scanDigits(in, p + 1, end);
      if (p == intEnd + 1) {
        pos = p;
        throw error("a number needs a digit after '.'");
      }
    }
    if (p >= end || (in[p] | 0x20) != 'e') {
      if (in[intStart] != '0'
          && intEnd - intStart <= JsonNumbers.PLAIN_DIGITS
          && (p == intEnd || in[p - 1] != '0')) {
        pos = p;
        if (p - s > numberReach) {
          numberReach = p - s;
        }
        return;
      }
      decimal(s, negative, intStart, intEnd, p);
      return;
    }
    number(s, negative, intStart, intEnd, p == intEnd ? p : intEnd + 1, p);
  }

  /**
   * Reads the rest of a number without exponent that is not canonical as written, or that starts
   * with 0: most are canonical once their trailing fraction zeros are cut (and a bare {@code '.'}),
   * which needs no copy (e.g. -12.50 -> -12.5, 7.000 -> 7, 0.10 -> 0.1); -0 is 0; the others go on
   * in {@link #number(int, boolean, int, int, int, int)}.
   */
  private void decimal(int s, boolean negative, int intStart, int intEnd, int fracEnd) {
    if (intEnd - intStart <= JsonNumbers.PLAIN_DIGITS) {
      int p = fracEnd;
      int fracStart = p == intEnd ? p : intEnd + 1;
      int cut;
      if (fracStart == p) {
        if (negative && intEnd - intStart == 1 && in[intStart] == '0') {
          cut = -1; // -0
        } else {
          cut = p; // an integer: canonical as written
        }
      } else {
        cut = plainDecimalCut(in, intStart, intEnd, fracStart, p);
      }
      if (cut > 0) {
        pos = p;
        if (p - s > numberReach) {
          numberReach = p - s;
        }
        if (cut != p) {
          flush(cut);
          runStart = p;
        }
        return;
      }
    }
    number(s, negative, intStart, intEnd, fracEnd == intEnd ? fracEnd : intEnd + 1, fracEnd);
  }

  /**
   * Reads the rest of a number, from the end of its fraction ({@code fracEnd}; {@code fracStart ==
   * fracEnd == intEnd} if it has none).
   */
  private void number(
      int s, boolean negative, int intStart, int intEnd, int fracStart, int fracEnd) {
    byte[] in = this.in;
    int end = this.end;
    int p = fracEnd;
    long exponent = 0;
    boolean hasExponent = false;
    if (p < end && (in[p] == 'e' || in[p] == 'E')) {
      hasExponent = true;
      p++;
      boolean negativeExponent = false;
      if (p < end && (in[p] == '+' || in[p] == '-')) {
        negativeExponent = in[p] == '-';
        p++;
      }
      int expStart = p;
      while (p < end && isDigit(in[p])) {
        if (exponent < 1_000_000_000_000_000L) { // 1e15: out of range for any input; stop
          exponent = exponent * 10 + (in[p] - '0');
        }
        p++;
      }
      if (p == expStart) {
        pos = p;
        throw error("a number needs a digit in its exponent");
      }
      if (negativeExponent) {
        exponent = -exponent;
      }
    }
    pos = p;
    long reach = (p - s) + Math.abs(exponent);
    if (reach > numberReach) {
      numberReach = (int) Math.min(reach, Integer.MAX_VALUE);
    }
    if (fracStart == fracEnd && !hasExponent && intEnd - intStart <= JsonNumbers.PLAIN_DIGITS) {
      // An integer of at most 21 digits is already canonical (its exact value, plain), except -0.
      if (negative && intEnd - intStart == 1 && in[intStart] == '0') {
        flush(s);
        out[outLen++] = '0';
        runStart = p;
      }
      return;
    }
    if (!hasExponent && intEnd - intStart <= JsonNumbers.PLAIN_DIGITS) {
      int cut = plainDecimalCut(in, intStart, intEnd, fracStart, fracEnd);
      if (cut == fracEnd) {
        return; // already canonical
      }
      if (cut > 0) {
        // Canonical once its trailing fraction zeros (and a bare '.') are cut: the same bytes as
        // JsonNumbers would write, with no copy (e.g. -12.50 -> -12.5, 7.000 -> 7).
        flush(cut);
        runStart = p;
        return;
      }
    }
    if (hasExponent
        && intEnd - intStart == 1
        && in[intStart] != '0'
        && (exponent >= 0
            ? exponent >= JsonNumbers.PLAIN_DIGITS && exponent <= JsonNumbers.MAX_EXPONENT
            : exponent <= -7 && exponent >= JsonNumbers.MIN_EXPONENT)
        && (fracStart == fracEnd || in[fracEnd - 1] != '0')) {
      // D[.ddd]e±x with no trailing fraction zero and a magnitude outside plain notation's range:
      // ECMAScript writes its mantissa as it is, so only the exponent may need a rewrite.
      if (in[fracEnd] == 'e'
          && in[fracEnd + 1] == (exponent < 0 ? '-' : '+')
          && in[fracEnd + 2] != '0') {
        // Already as ECMAScript writes it (e.g. JavaScript's 1e+21, 6.02214076e+23, 1.5e-7): a
        // lowercase e, a sign, no leading exponent zero. It stays in the run.
        return;
      }
      // E.g. 6.02214076e23, 7E-10, 1e021: the mantissa stays in the run, the exponent is written
      // (never longer than e-324).
      flush(fracEnd);
      ensure(outLen + 5 + (end - p) + 64);
      outLen = JsonNumbers.writeExponent(out, outLen, (int) exponent);
      runStart = p;
      return;
    }
    flush(s);
    // The only output that can outgrow its input: keep room for the rest of the input.
    ensure(outLen + (p - s) + JsonNumbers.MAX_GROWTH + (end - p) + 64);
    int o;
    if (hasExponent && intEnd - intStart == 1 && in[intStart] != '0' && Math.abs(exponent) < 400) {
      // D[.ddd]e±x, the way most exponents are written: no search for the significant digits.
      int last = fracEnd;
      while (last > fracStart && in[last - 1] == '0') {
        last--;
      }
      if (last == fracStart) {
        last = intEnd; // no fraction digit kept: drop the '.' too
      }
      o = JsonNumbers.writeScientific(in, negative, intStart, last, (int) exponent, out, outLen);
    } else {
      o = numbers.write(in, negative, intStart, intEnd, fracStart, fracEnd, exponent, out, outLen);
    }
    if (o < 0) {
      pos = s;
      throw outOfRange(s, p);
    }
    outLen = o;
    runStart = p;
  }

  private NumberOutOfRangeException outOfRange(int s, int p) {
    String text = new String(in, s, Math.min(p - s, 40), StandardCharsets.ISO_8859_1);
    return new NumberOutOfRangeException(
        "number "
            + text
            + (p - s > 40 ? "..." : "")
            + " is outside the range that keys keep exactly (a non-zero number needs a magnitude"
            + " from 1e-324 to below 1e309); send it as a JSON string",
        s - start);
  }

  /**
   * Where the canonical form of a decimal without exponent, with at most {@link
   * JsonNumbers#PLAIN_DIGITS} integer digits, ends in its own text, or -1 if it is not a prefix of
   * that text. Such a number is written in plain notation with its digits as they are, except that
   * trailing fraction zeros go (and the {@code '.'} if no fraction digit is left). Not a prefix: a
   * zero value (written {@code 0}, whatever its sign or zeros), and {@code 0.000000ddd} with six or
   * more zeros after the point (written {@code d.dde-n}).
   *
   * @return {@code fracEnd} if the text is canonical as it is, else the cut point or -1
   */
  private static int plainDecimalCut(
      byte[] in, int intStart, int intEnd, int fracStart, int fracEnd) {
    int last = fracEnd;
    while (last > fracStart && in[last - 1] == '0') {
      last--;
    }
    if (in[intStart] != '0') {
      // JSON has no other leading zeros: the integer part is the number's first digits.
      return last == fracStart ? intEnd : last;
    }
    if (last == fracStart) {
      return -1; // zero
    }
    int zeros = 0;
    while (in[fracStart + zeros] == '0') {
      zeros++;
    }
    return zeros < 6 ? last : -1;
  }

  /**
   * Returns the index of the first byte at or after {@code p} that is not an ASCII digit (or {@code
   * end}), eight bytes at a time: with the high bits cleared, adding 0x46 sets a byte's high bit
   * iff it is at least {@code ':'}, adding 0x50 iff it is at least {@code '0'}, and neither sum
   * carries into the next byte, so every flag is exact.
   */
  private static int scanDigits(byte[] in, int p, int end) {
    while (p + 8 <= end) {
      long x = (long) LONGS.get(in, p);
      long low = x & 0x7F7F7F7F7F7F7F7FL;
      long flags =
          (x | (low + 0x4646464646464646L) | ~(low + 0x5050505050505050L)) & 0x8080808080808080L;
      if (flags != 0) {
        return p + (Long.numberOfTrailingZeros(flags) >>> 3);
      }
      p += 8;
    }
    while (p < end && isDigit(in[p])) {
      p++;
    }
    return p;
  }

  private static boolean isDigit(byte b) {
    return b >= '0' && b <= '9';
  }

  /** Skips whitespace, which ends the pending run. Small, so that every call site inlines it. */
  private void skipWhitespace() {
    if (pos < end && isWhitespace(in[pos])) {
      skipWhitespaceRun();
    }
  }

  private void skipWhitespaceRun() {
    byte[] in = this.in;
    int p = pos;
    flush(p);
    do {
      p++;
    } while (p < end && isWhitespace(in[p]));
    pos = p;
    runStart = p;
  }

  private static boolean isWhitespace(byte b) {
    // One comparison decides for every byte above the space (all but whitespace and controls in
    // compact JSON), instead of four.
    return b <= ' ' && (b == ' ' || b == '\n' || b == '\r' || b == '\t');
  }

  private void pushMember(int nameStart, int nameEnd, int memberEnd, long prefix) {
    if (memberTop + 3 > members.length) {
      members = Arrays.copyOf(members, members.length * 2);
      prefixes = Arrays.copyOf(prefixes, members.length / 3 + 1);
    }
    members[memberTop] = nameStart;
    members[memberTop + 1] = nameEnd;
    members[memberTop + 2] = memberEnd;
    prefixes[memberTop / 3] = prefix;
    memberTop += 3;
  }

  /** The sort prefix (see {@link #prefixes}) of the name just read at output offset nameStart. */
  private long namePrefix(int nameStart, int nameEnd) {
    int n = Math.min(8, nameEnd - nameStart - 2);
    int at = runStart + nameStart + 1 - outLen; // the name's input offset, if it is in the run
    if (nameStart >= outLen && at + 8 <= end) {
      return prefix(in, at, n); // the name is still in the pending run of input
    } else if (nameEnd <= outLen && nameStart + 9 <= out.length) {
      // Flushed whole (a name with an escape): read it from the output the same way (bytes past
      // the name are masked off).
      return prefix(out, nameStart + 1, n);
    }
    return prefixOfOutput(nameStart, n);
  }

  /** The prefix (see {@link #prefixes}) of the {@code n <= 8} name bytes at {@code in[at]}. */
  private static long prefix(byte[] in, int at, int n) {
    if (n == 0) {
      return 0;
    }
    long mask = -1L << (64 - 8 * n); // the first n bytes, big-endian
    long x = (long) BIG_LONGS.get(in, at) & mask;
    long backslash = x ^ 0x5C5C5C5C5C5C5C5CL;
    long flags =
        ((x | (x - 0x2020202020202020L)) & mask | ((backslash - 0x0101010101010101L) & ~backslash))
            & 0x8080808080808080L
            & mask;
    // Every byte >= 0x80, < 0x20 or '\\' is flagged. Borrows can add false flags (e.g. the
    // zeroed bytes past the name borrow from a last byte ' '), which only means -1: the general
    // comparison, never a wrong order.
    return flags == 0 ? x : -1;
  }

  private long prefixOfOutput(int nameStart, int n) {
    long prefix = 0;
    for (int i = 0; i < n; i++) {
      byte b = outputByte(nameStart + 1 + i);
      if (b < 0x20 || b == '\\') { // negative: non-ASCII
        return -1;
      }
      prefix |= (long) b << (56 - 8 * i);
    }
    return prefix;
  }

  /** Returns the byte at output offset {@code i}, flushed or still in the run. */
  private byte outputByte(int i) {
    return i < outLen ? out[i] : in[runStart + i - outLen];
  }

  /**
   * Sorts the members {@code members[base, memberTop)} of the object just read by name, in UTF-16
   * code unit order, rejecting duplicates, and permutes the object's output bytes if they were
   * unsorted.
   */
  private void sortMembers(int base, int objectAt) {
    int n = (memberTop - base) / 3;
    objectStart = objectAt;
    if (order.length < n) {
      order = new int[Math.max(n, order.length * 2)];
      orderTmp = new int[order.length];
      tiePositions = new int[order.length];
      keys = new long[order.length];
      keysTmp = new long[order.length];
    }
    if (!sortByPrefix(base, n)) {
      permutation = order;
      permutationBase = 0;
      flush(pos); // the general comparison reads names from the output
      boolean sorted = true;
      for (int i = 1; i < n; i++) {
        if (compareMembers(base + 3 * (i - 1), base + 3 * i) > 0) {
          sorted = false;
          break;
        }
      }
      if (sorted) {
        return;
      }
      for (int i = 0; i < n; i++) {
        order[i] = base + 3 * i;
      }
      // Any two equal names are compared somewhere in the sort, so compareMembers sees them.
      mergeSort(order, orderTmp, 0, n);
    } else if (permutation[0] == -1) {
      return; // already in order
    }
    int regionStart = members[base];
    int regionEnd = members[memberTop - 1];
    int length = regionEnd - regionStart;
    byte[] src;
    byte[] dst;
    int shift; // member m is at src[members[m] - shift]
    if (regionStart >= outLen) {
      // Nothing in the object was rewritten, so it is all still in the pending run: gather its
      // members from the input straight into the output, with no copy of the object before.
      flush(runStart + (regionStart - outLen));
      src = in;
      dst = out;
      shift = outLen - runStart;
    } else {
      flush(pos);
      if (regionStart <= length) {
        // Gather from the output into the scratch buffer, which then becomes the output: one
        // copy of the bytes before the object (no more than the object) instead of a copy of the
        // whole object.
        dst = scratch.length < out.length ? new byte[out.length] : scratch;
        System.arraycopy(out, 0, dst, 0, regionStart);
        src = out;
        shift = 0;
      } else {
        if (scratch.length < length + 32) {
          scratch = new byte[Math.max(length + 32, scratch.length * 2)];
        }
        System.arraycopy(out, regionStart, scratch, 0, length);
        src = scratch;
        dst = out;
        shift = regionStart;
      }
    }
    // Bytes past the object in dst are free (not output yet) unless dst is the output with the
    // object still copied in it.
    int dstEnd = src == scratch ? regionEnd : dst.length;
    int srcEnd = src.length;
    int[] permutation = this.permutation;
    int permutationBase = this.permutationBase;
    int w = regionStart;
    for (int i = 0; i < n; i++) {
      int m = permutationBase + permutation[i];
      int from = members[m] - shift;
      int len = members[m + 2] - members[m];
      // A short member: eight bytes at a time (cheaper than arraycopy at this size). The bytes
      // written past it are rewritten by the comma and the next members, or are past the output.
      if (len <= 16 && w + 16 <= dstEnd && from + 16 <= srcEnd) {
        LONGS.set(dst, w, (long) LONGS.get(src, from));
        LONGS.set(dst, w + 8, (long) LONGS.get(src, from + 8));
      } else if (len <= 32 && w + 32 <= dstEnd && from + 32 <= srcEnd) {
        // Most members: four words whatever the length, no loop to mispredict.
        LONGS.set(dst, w, (long) LONGS.get(src, from));
        LONGS.set(dst, w + 8, (long) LONGS.get(src, from + 8));
        LONGS.set(dst, w + 16, (long) LONGS.get(src, from + 16));
        LONGS.set(dst, w + 24, (long) LONGS.get(src, from + 24));
      } else if (len <= 64 && w + len + 8 <= dstEnd && from + 64 <= srcEnd) {
        for (int k = 0; k < len; k += 8) {
          LONGS.set(dst, w + k, (long) LONGS.get(src, from + k));
        }
      } else {
        System.arraycopy(src, from, dst, w, len);
      }
      w += len;
      if (i < n - 1) {
        dst[w++] = ',';
      }
    }
    if (src != scratch) {
      dst[regionEnd] = '}';
      outLen = regionEnd + 1;
      runStart = pos;
      if (dst != out) {
        scratch = out;
        out = dst;
      }
    }
  }

  /**
   * The common case: an object whose names all start with plain ASCII sorts by their 8-byte
   * prefixes, each with the member's index in its low byte (a sort of plain longs, no second
   * array); members whose keys tie are then ordered by their whole names. The order is kept for the
   * next object with the same prefixes in the same order, which takes it once its tied members (if
   * any) compare in order. Sets {@link #permutation} (to {@link #order} with {@code order[0] = -1}
   * if the members are already in order) and returns true, or returns false if the general sort is
   * needed.
   */
  private boolean sortByPrefix(int base, int n) {
    int first = base / 3;
    int slot = shapeSlot(first, n);
    if (n <= MAX_SHAPE
        && shapeSize[slot] == n
        && Arrays.equals(prefixes, first, first + n, shapePrefixes[slot], 0, n)) {
      // The names of the object sorted last in this slot, in the same order (a sender's schema):
      // its order, with no sort, once the members whose prefixes tie are checked to be in order.
      int[] cached = shapeOrder[slot];
      int ties = shapeTieCount[slot];
      if (ties == 0 || tiesInOrder(cached, shapeTies[slot], ties, base)) {
        permutation = cached;
        permutationBase = base;
        return true;
      }
    }
    permutation = order;
    permutationBase = 0;
    long[] keys = this.keys;
    // Every prefix byte is below 0x80, so a prefix is a non-negative long whose signed order is
    // the names' order. Its low byte (more bits for a wider object) is replaced by the member's
    // index: keys sort as the prefixes' first seven bytes, and members whose keys tie there are
    // then ordered by their whole names.
    int indexBits = Math.max(8, 32 - Integer.numberOfLeadingZeros(n - 1));
    long indexMask = (1L << indexBits) - 1;
    boolean sorted = true;
    long previous = -1;
    for (int i = 0; i < n; i++) {
      long prefix = prefixes[first + i];
      if (prefix < 0) {
        return false; // not plain ASCII: the general sort decodes
      }
      if (prefix <= previous) {
        sorted = false;
      }
      previous = prefix;
      keys[i] = prefix & ~indexMask | i;
    }
    if (sorted) {
      order[0] = -1;
      return true; // not flushed: an object whose members came in order stays in the run
    }
    if (n <= 32) {
      insertionSort(keys, 0, n);
    } else {
      // Wide objects (e.g. a map of ids): an insertion sort's moves grow with n^2.
      mergeSort(keys, keysTmp, 0, n);
    }
    int[] order = this.order;
    int[] tiePositions = this.tiePositions;
    int ties = 0;
    int tieStart = 0;
    for (int i = 0; i < n; i++) {
      order[i] = base + 3 * (int) (keys[i] & indexMask);
      if (i > 0 && ((keys[i] ^ keys[i - 1]) & ~indexMask) != 0) {
        if (i - tieStart > 1) {
          flush(pos); // a shared prefix: compare the whole names, in the output
          mergeSort(order, orderTmp, tieStart, i);
          for (int t = tieStart + 1; t < i; t++) {
            tiePositions[ties++] = t;
          }
        }
        tieStart = i;
      }
    }
    if (n - tieStart > 1) {
      flush(pos);
      mergeSort(order, orderTmp, tieStart, n);
      for (int t = tieStart + 1; t < n; t++) {
        tiePositions[ties++] = t;
      }
    }
    if (n <= MAX_SHAPE) {
      remember(slot, first, base, n, ties);
    }
    return true;
  }

  /**
   * Whether the members of a kept order whose prefixes tie (each at {@code tiePositions[k]} with
   * the one before it) are in order by their whole names in the object being sorted: then the kept
   * order is its order. Equal names are a duplicate, as in a sort.
   */
  private boolean tiesInOrder(int[] cached, int[] tiePositions, int ties, int base) {
    flush(pos); // the comparison reads names from the output
    for (int k = 0; k < ties; k++) {
      int i = tiePositions[k];
      if (compareMembers(base + cached[i - 1], base + cached[i]) > 0) {
        return false;
      }
    }
    return true;
  }

  /** The slot of {@link #shapePrefixes} for the {@code n} prefixes at {@code prefixes[first]}. */
  private int shapeSlot(int first, int n) {
    long h = (prefixes[first] ^ (prefixes[first + n - 1] >>> 8)) + n;
    h *= 0x9E3779B97F4A7C15L;
    return (int) (h >>> (64 - SHAPE_BITS));
  }

  /**
   * Keeps the order just computed for the next object with the same prefixes, with the positions
   * {@code tiePositions[0, ties)} of its members whose prefixes tie with the one before.
   */
  private void remember(int slot, int first, int base, int n, int ties) {
    long[] cachedPrefixes = shapePrefixes[slot];
    if (cachedPrefixes == null || cachedPrefixes.length < n) {
      cachedPrefixes = new long[Math.max(n, 16)];
      shapePrefixes[slot] = cachedPrefixes;
      shapeOrder[slot] = new int[cachedPrefixes.length];
      shapeTies[slot] = new int[cachedPrefixes.length];
    }
    System.arraycopy(prefixes, first, cachedPrefixes, 0, n);
    int[] cachedOrder = shapeOrder[slot];
    for (int i = 0; i < n; i++) {
      cachedOrder[i] = order[i] - base;
    }
    System.arraycopy(tiePositions, 0, shapeTies[slot], 0, ties);
    shapeTieCount[slot] = ties;
    shapeSize[slot] = n;
  }

  private static void insertionSort(long[] a, int from, int to) {
    for (int i = from + 1; i < to; i++) {
      long v = a[i];
      int j = i - 1;
      while (j >= from && a[j] > v) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = v;
    }
  }

  /** Merge sort of distinct longs; insertion sort for short runs. */
  private static void mergeSort(long[] a, long[] tmp, int from, int to) {
    if (to - from <= 16) {
      insertionSort(a, from, to);
      return;
    }
    int mid = (from + to) >>> 1;
    mergeSort(a, tmp, from, mid);
    mergeSort(a, tmp, mid, to);
    if (a[mid - 1] < a[mid]) {
      return;
    }
    System.arraycopy(a, from, tmp, from, to - from);
    int i = from;
    int j = mid;
    for (int k = from; k < to; k++) {
      if (j >= to || (i < mid && tmp[i] < tmp[j])) {
        a[k] = tmp[i++];
      } else {
        a[k] = tmp[j++];
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

  /**
   * Compares two members' names (canonical string bytes between the quotes); equal names are a
   * duplicate, which is an error.
   */
  private int compareMembers(int a, int b) {
    long pa = prefixes[a / 3];
    long pb = prefixes[b / 3];
    int c;
    if ((pa | pb) >= 0 && pa != pb) {
      c = Long.compareUnsigned(pa, pb);
    } else {
      c =
          CanonicalStrings.compare(
              out, members[a] + 1, members[a + 1] - 1, members[b] + 1, members[b + 1] - 1);
    }
    if (c == 0) {
      throw duplicate(b);
    }
    return c;
  }

  private InvalidJsonException duplicate(int member) {
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
