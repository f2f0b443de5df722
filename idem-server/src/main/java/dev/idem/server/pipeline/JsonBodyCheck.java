package dev.idem.server.pipeline;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import dev.idem.key.CanonicalBody;
import dev.idem.key.CanonicalJson;
import dev.idem.key.InvalidJsonException;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * Checks that a webhook body is one well-formed I-JSON value (RFC 7493, what the key rules read)
 * within explicit limits, in one streaming pass without building a tree: UTF-8 (not UTF-16 or
 * UTF-32, which have NUL bytes), no lone surrogate in any string or name, no number outside the
 * IEEE-754 double range (e.g. {@code 1e400}), nesting depth, string and number lengths, and no
 * duplicate field names in any object (which JSON parsers resolve differently, so a signed body
 * could mean two things). Each is {@code 400 malformed_json} (or its own code), before any key is
 * derived.
 *
 * <h2>One read of the body</h2>
 *
 * <p>{@link #read(byte[])} is what the pipeline calls: it reads the body once with the key reader
 * ({@link CanonicalBody}: I-JSON validation and the canonical form in one streaming pass, with this
 * check's depth limit), and the key, the ordering key, the sequence and the fingerprint then read
 * that result. The streaming check above ({@link #check(byte[])}) still decides every answer it
 * gave before, but runs only when the read alone cannot: when the key reader refuses the body (then
 * the check's answer is the one given, code and message as before), or when the body comes near a
 * limit only the check has (a number with a long text or a large exponent, which the check measures
 * against the double range and {@value #MAX_NUMBER_LENGTH} characters; a member name longer than
 * the check's name limit; a body over the size limit). A body the check accepts but the key reader
 * refuses is passed on unread, so each reader answers for it as it did before.
 */
public final class JsonBodyCheck {
  /** The longest number accepted, in characters. */
  static final int MAX_NUMBER_LENGTH = 100;

  /**
   * A number whose text length plus exponent magnitude reaches this may be over the number length
   * or outside the double range, so the streaming check looks at the body. Well below both limits
   * (100 characters, exponents near 308 and -324); ordinary numbers are far from it.
   */
  static final int NUMBER_REACH_CHECKED = 64;

  private final JsonFactory factory;
  private final int maxDepth;
  private final long maxBody;
  private final int maxNameLength;

  /**
   * Creates a check.
   *
   * @param maxDepth the deepest nesting of arrays and objects accepted
   * @param maxBody the body limit; no string in it can be longer
   */
  public JsonBodyCheck(int maxDepth, long maxBody) {
    this.maxDepth = maxDepth;
    this.maxBody = maxBody;
    this.maxNameLength = (int) Math.min(50_000, Math.max(1, maxBody));
    this.factory =
        JsonFactory.builder()
            .streamReadConstraints(
                StreamReadConstraints.builder()
                    .maxNestingDepth(maxDepth)
                    .maxNumberLength(MAX_NUMBER_LENGTH)
                    .maxStringLength((int) Math.min(Integer.MAX_VALUE, Math.max(1, maxBody)))
                    .maxNameLength(maxNameLength)
                    .build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
  }

  /**
   * Returns the factory configured with this check's limits, for other readers of the same body.
   *
   * @return the JSON factory
   */
  public JsonFactory factory() {
    return factory;
  }

  /**
   * What {@link #read(byte[])} found: a rejection, or the read body (null when only the raw readers
   * can read it).
   *
   * @param rejected why the body is refused, or null
   * @param canonical the read body, or null if refused or left unread
   */
  public record Read(Outcome.@Nullable Rejected rejected, @Nullable CanonicalBody canonical) {}

  private static final Read UNREAD = new Read(null, null);

  /**
   * Reads a body once: validates it with this check's limits and answers exactly as {@link
   * #check(byte[])} does, and yields its canonical form for every later reader.
   *
   * @param body the raw body
   * @return the rejection (bad input: {@code 400} over HTTP), or the read body
   */
  public Read read(byte[] body) {
    CanonicalBody read;
    try {
      read = CanonicalBody.read(body, Math.min(maxDepth, CanonicalJson.MAX_DEPTH));
    } catch (InvalidJsonException e) {
      Outcome.Rejected bad = check(body);
      // Refused by the check: its answer. Accepted by it: each reader answers as it did before.
      return bad != null ? new Read(bad, null) : UNREAD;
    }
    if (read.numberReach() >= NUMBER_REACH_CHECKED
        || read.longestName() - 2 > maxNameLength
        || body.length > maxBody) {
      Outcome.Rejected bad = check(body);
      if (bad != null) {
        return new Read(bad, null);
      }
    }
    return new Read(null, read);
  }

  /**
   * Checks a body.
   *
   * @param body the raw body
   * @return null if it is fine, else why it is refused (bad input: {@code 400} over HTTP)
   */
  public Outcome.@Nullable Rejected check(byte[] body) {
    String encoding = notUtf8(body);
    if (encoding != null) {
      return bad("malformed_json", encoding);
    }
    try (JsonParser p = factory.createParser(body)) {
      JsonToken t = p.nextToken();
      if (t == null) {
        return bad("malformed_json", "the body is empty; send one JSON value");
      }
      int depth = 0;
      do {
        String bad = notIJson(p, t);
        if (bad != null) {
          return bad("malformed_json", bad);
        }
        if (t.isStructStart()) {
          depth++;
        } else if (t.isStructEnd()) {
          depth--;
        }
      } while (depth > 0 && (t = p.nextToken()) != null);
      if (p.nextToken() != null) {
        return bad("malformed_json", "the body has content after its JSON value; send one value");
      }
      return null;
    } catch (StreamConstraintsException e) {
      String m = e.getOriginalMessage();
      if (m != null && m.contains("nesting depth")) {
        return bad(
            "nesting_too_deep",
            "the JSON is nested deeper than " + maxDepth + " levels; flatten it");
      }
      return bad("malformed_json", "the JSON exceeds a limit: " + m);
    } catch (IOException e) {
      String m =
          e instanceof com.fasterxml.jackson.core.JsonProcessingException j
              ? j.getOriginalMessage()
              : e.getMessage();
      if (m != null && m.startsWith("Duplicate field")) {
        return bad("duplicate_field", m + "; send each field name once per object");
      }
      return bad("malformed_json", "the body is not valid JSON: " + firstLine(m));
    }
  }

  private static Outcome.Rejected bad(String code, String message) {
    return new Outcome.Rejected(Outcome.Rejection.BAD_INPUT, code, message);
  }

  /** What makes one token not I-JSON, or null. */
  private static @Nullable String notIJson(JsonParser p, JsonToken t) throws IOException {
    switch (t) {
      case FIELD_NAME, VALUE_STRING -> {
        String text = p.getText();
        int at = loneSurrogate(text);
        if (at >= 0) {
          return "the body has a lone surrogate (\\u"
              + Integer.toHexString(text.charAt(at))
              + ") in a "
              + (t == JsonToken.FIELD_NAME ? "field name" : "string")
              + "; send well-formed Unicode text";
        }
        return null;
      }
      case VALUE_NUMBER_FLOAT -> {
        double d = p.getDoubleValue();
        if (Double.isInfinite(d) || (d == 0 && hasNonZeroDigit(p.getText()))) {
          return "the number "
              + p.getText()
              + " is outside the range of a double (1e-324 to about 1.8e308 in magnitude);"
              + " send it as a string";
        }
        return null;
      }
      default -> {
        return null;
      }
    }
  }

  private static int loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return i;
        }
      } else if (Character.isLowSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }

  /**
   * Says why the bytes are not UTF-8 text without NUL, or null if they are: overlong forms, encoded
   * surrogates and code points past U+10FFFF are not UTF-8; a NUL byte cannot be in JSON text, so
   * it means UTF-16 or UTF-32.
   */
  static @Nullable String notUtf8(byte[] b) {
    int i = 0;
    while (i < b.length) {
      int c = b[i] & 0xFF;
      if (c == 0) {
        return "the body has a NUL byte at offset "
            + i
            + ", so it is not UTF-8 JSON (UTF-16 or UTF-32?); send JSON in UTF-8";
      }
      if (c < 0x80) {
        i++;
        continue;
      }
      int n;
      int lo = 0x80;
      int hi = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        n = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        n = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80; // no overlong forms
        hi = c == 0xED ? 0x9F : 0xBF; // no UTF-16 surrogates
      } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; // nothing past U+10FFFF
      } else {
        return notUtf8At(i);
      }
      if (i + n >= b.length) {
        return notUtf8At(i);
      }
      int second = b[i + 1] & 0xFF;
      if (second < lo || second > hi) {
        return notUtf8At(i);
      }
      for (int k = 2; k <= n; k++) {
        int next = b[i + k] & 0xFF;
        if (next < 0x80 || next > 0xBF) {
          return notUtf8At(i);
        }
      }
      i += n + 1;
    }
    return null;
  }

  private static String notUtf8At(int offset) {
    return "the body is not UTF-8 (an invalid byte sequence at offset "
        + offset
        + "); send JSON in UTF-8";
  }

  private static String firstLine(@Nullable String m) {
    if (m == null) {
      return "parse error";
    }
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }

  /** Whether a number's mantissa has a non-zero digit (so a value of 0 means it underflowed). */
  private static boolean hasNonZeroDigit(String number) {
    for (int i = 0; i < number.length(); i++) {
      char c = number.charAt(i);
      if (c == 'e' || c == 'E') {
        return false;
      }
      if (c >= '1' && c <= '9') {
        return true;
      }
    }
    return false;
  }
}
